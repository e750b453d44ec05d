//! Numbers in words for range lists ("fifty", "二十点五"), as hassil spells
//! them: every rule set of CLDR's RBNF for the language that
//! `unicode_rbnf` formats a number with (English: numbering and cardinal;
//! Chinese: numbering, cardinal, the financial capitals, the `两` form and
//! the day-of-month form), each also with its hyphens as spaces. Written out
//! here for the two languages robobrain understands; the hassil comparison
//! test checks them against `unicode_rbnf` over every range the grammars use.

const EN_ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const EN_TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

fn en_below_thousand(n: u64) -> String {
    let mut parts = Vec::new();
    if n >= 100 {
        parts.push(format!("{} hundred", EN_ONES[(n / 100) as usize]));
    }
    let rest = n % 100;
    if rest > 0 || n == 0 {
        parts.push(if rest < 20 {
            EN_ONES[rest as usize].to_string()
        } else if rest.is_multiple_of(10) {
            EN_TENS[(rest / 10) as usize].to_string()
        } else {
            format!(
                "{}-{}",
                EN_TENS[(rest / 10) as usize],
                EN_ONES[(rest % 10) as usize]
            )
        });
    }
    parts.join(" ")
}

/// English cardinal of a non-negative integer ("one thousand one hundred").
fn en_integer(n: u64) -> String {
    if n < 1000 {
        return en_below_thousand(n);
    }
    let mut parts = Vec::new();
    let scales = [
        (1_000_000_000, "billion"),
        (1_000_000, "million"),
        (1000, "thousand"),
    ];
    let mut rest = n;
    for (scale, word) in scales {
        if rest >= scale {
            parts.push(format!("{} {word}", en_below_thousand(rest / scale)));
            rest %= scale;
        }
    }
    if rest > 0 {
        parts.push(en_below_thousand(rest));
    }
    parts.join(" ")
}

/// Chinese digit sets: (zero, one…nine, ten, hundred, thousand, ten-thousand).
struct ZhSet {
    digits: [&'static str; 10],
    ten: &'static str,
    hundred: &'static str,
    thousand: &'static str,
    wan: &'static str,
    /// `两` before 百 / 千 (the alternate form).
    liang: bool,
}

const ZH_CARDINAL: ZhSet = ZhSet {
    digits: ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"],
    ten: "十",
    hundred: "百",
    thousand: "千",
    wan: "万",
    liang: false,
};
const ZH_NUMBERING: ZhSet = ZhSet {
    digits: ["〇", "一", "二", "三", "四", "五", "六", "七", "八", "九"],
    ..ZH_CARDINAL
};
const ZH_ALTERNATE: ZhSet = ZhSet {
    liang: true,
    ..ZH_CARDINAL
};
const ZH_FINANCIAL: ZhSet = ZhSet {
    digits: ["零", "壹", "贰", "叁", "肆", "伍", "陆", "柒", "捌", "玖"],
    ten: "拾",
    hundred: "佰",
    thousand: "仟",
    ..ZH_CARDINAL
};

impl ZhSet {
    /// 1–99; `lead_one`: say 一十 for 10–19 (after a higher unit).
    fn tens(&self, n: u64, lead_one: bool) -> String {
        let (t, o) = ((n / 10) as usize, (n % 10) as usize);
        let mut s = String::new();
        if t > 0 {
            if t > 1 || lead_one {
                s.push_str(self.digits[t]);
            }
            s.push_str(self.ten);
        }
        if o > 0 {
            s.push_str(self.digits[o]);
        }
        s
    }

    fn lead(&self, d: u64) -> &'static str {
        if d == 2 && self.liang {
            "两"
        } else {
            self.digits[d as usize]
        }
    }

    /// 0–9999.
    fn below_wan(&self, n: u64) -> String {
        if n == 2 && self.liang {
            return "两".into();
        }
        if n == 0 {
            return self.digits[0].to_string();
        }
        if n < 100 {
            return self.tens(n, false);
        }
        let mut s = String::new();
        let mut rest = n;
        let mut zero_pending = false;
        for (unit, word) in [(1000, self.thousand), (100, self.hundred)] {
            if rest >= unit {
                if zero_pending {
                    s.push_str(self.digits[0]);
                    zero_pending = false;
                }
                s.push_str(self.lead(rest / unit));
                s.push_str(word);
                rest %= unit;
            } else if !s.is_empty() {
                zero_pending = true;
            }
        }
        if rest > 0 {
            if zero_pending || rest < 10 {
                s.push_str(self.digits[0]);
            }
            s.push_str(&self.tens(rest, true));
        }
        s
    }

    fn integer(&self, n: u64) -> String {
        if n < 10_000 {
            return self.below_wan(n);
        }
        let mut s = format!("{}{}", self.below_wan(n / 10_000), self.wan);
        let rest = n % 10_000;
        if rest > 0 {
            if rest < 1000 {
                s.push_str(self.digits[0]);
            }
            s.push_str(&self.below_wan(rest));
        }
        s
    }

    fn number(&self, value: f64) -> String {
        let int = value.trunc() as u64;
        let frac = ((value - value.trunc()) * 10.0).round() as usize;
        if frac == 0 {
            self.integer(int)
        } else {
            // A bare 2 before a decimal point stays 二 even in the 两 form.
            let whole = if self.liang && int == 2 {
                self.digits[2].to_string()
            } else {
                self.integer(int)
            };
            format!("{whole}点{}", self.digits[frac])
        }
    }
}

/// The day-of-month form (初一…初十, 廿一, 丗一, 卌一), else the numbering form.
fn zh_days(n: u64) -> String {
    let ones = ZH_NUMBERING.digits;
    match n {
        1..=10 => format!("初{}", if n == 10 { "十" } else { ones[n as usize] }),
        21..=29 => format!("廿{}", ones[(n % 10) as usize]),
        31..=39 => format!("丗{}", ones[(n % 10) as usize]),
        41..=49 => format!("卌{}", ones[(n % 10) as usize]),
        _ => ZH_NUMBERING.integer(n),
    }
}

/// Every way a number is spelled in `language` (`en…`, `zh…`), in the order
/// hassil inserts them (duplicates removed, hyphens also as spaces); empty
/// for other languages and for negative numbers.
pub fn spellings(language: &str, value: f64) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if value < 0.0 || !value.is_finite() {
        return out;
    }
    let whole = value.fract() == 0.0;
    let mut push = |w: String| {
        if !out.contains(&w) {
            out.push(w.clone());
        }
        let broken = w.replace(['-', '_'], " ");
        if !out.contains(&broken) {
            out.push(broken);
        }
    };
    let lang = language.to_ascii_lowercase();
    if lang.starts_with("en") {
        let int = value.trunc() as u64;
        if whole {
            push(en_integer(int));
        } else {
            let frac = ((value - value.trunc()) * 10.0).round() as usize;
            push(format!("{} point {}", en_integer(int), EN_ONES[frac]));
        }
    } else if lang.starts_with("zh") {
        let int = value.trunc() as u64;
        if whole {
            push(zh_days(int));
        }
        push(ZH_NUMBERING.number(value));
        push(ZH_FINANCIAL.number(value));
        push(ZH_CARDINAL.number(value));
        push(ZH_ALTERNATE.number(value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_and_chinese_spellings() {
        assert_eq!(spellings("en", 25.0), vec!["twenty-five", "twenty five"]);
        assert_eq!(spellings("en", 101.0), vec!["one hundred one"]);
        assert_eq!(spellings("en", 1100.0), vec!["one thousand one hundred"]);
        assert_eq!(spellings("en", 20.5), vec!["twenty point five"]);
        assert_eq!(spellings("zh-CN", 21.0), vec!["廿一", "二十一", "贰拾壹"]);
        assert_eq!(spellings("zh", 2000.0), vec!["二千", "贰仟", "两千"]);
        assert_eq!(
            spellings("zh", 1010.0),
            vec!["一千〇一十", "壹仟零壹拾", "一千零一十"]
        );
        assert_eq!(spellings("zh", 0.5), vec!["〇点五", "零点伍", "零点五"]);
        assert_eq!(spellings("zh", 10.0), vec!["初十", "十", "拾"]);
        assert!(spellings("de", 1.0).is_empty());
    }
}
