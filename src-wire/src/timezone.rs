//! The home's time zone: an IANA name (`Europe/Berlin`) looked up in the tz
//! database bundled into the binary, so a zone means the same on every
//! machine and in CI, whatever `/usr/share/zoneinfo` holds; or, when none
//! is configured, the machine's own (`TZ`, then `/etc/localtime`). The
//! policy's night rule reads the local hour from here: daylight saving
//! moves it, the UTC offset never has to be written by hand.

use std::sync::OnceLock;

pub use jiff::Timestamp;
pub use jiff::tz::TimeZone;

/// A zone name the bundled tz database does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected an IANA time zone name such as \"Europe/Berlin\" or \"America/New_York\", found {0:?}"
)]
pub struct UnknownZone(pub String);

/// The tz database bundled into the binary (never the machine's).
fn bundled() -> &'static jiff::tz::TimeZoneDatabase {
    static DB: OnceLock<jiff::tz::TimeZoneDatabase> = OnceLock::new();
    DB.get_or_init(jiff::tz::TimeZoneDatabase::bundled)
}

/// The zone named `name` (`Europe/Berlin`, `UTC`; case does not matter).
pub fn named(name: &str) -> Result<TimeZone, UnknownZone> {
    bundled()
        .get(name.trim())
        .map_err(|_| UnknownZone(name.to_string()))
}

/// The machine's zone: `TZ`, then `/etc/localtime`, by its IANA name in the
/// bundled database when it has one (else its rules as the machine has
/// them); UTC when the machine names none.
pub fn system() -> TimeZone {
    match TimeZone::try_system() {
        Ok(zone) => zone
            .iana_name()
            .and_then(|name| named(name).ok())
            .unwrap_or(zone),
        Err(_) => TimeZone::UTC,
    }
}

/// The zone `name` configures, or the machine's when it is `None`.
pub fn configured(name: Option<&str>) -> Result<TimeZone, UnknownZone> {
    name.map_or_else(|| Ok(system()), named)
}

/// The hour of day, 0–24 with its fraction, at `at` in `zone`.
pub fn local_hour(zone: &TimeZone, at: Timestamp) -> f64 {
    let t = zone.to_datetime(at).time();
    f64::from(t.hour())
        + f64::from(t.minute()) / 60.0
        + (f64::from(t.second()) + f64::from(t.subsec_nanosecond()) / 1e9) / 3600.0
}

/// A zone's name for people: its IANA name, or `UTC±hh:mm` now.
pub fn label(zone: &TimeZone) -> String {
    zone.iana_name().map_or_else(
        || format!("UTC{}", zone.to_offset(Timestamp::now())),
        str::to_string,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(utc: &str) -> Timestamp {
        utc.parse().unwrap()
    }

    #[test]
    fn berlin_springs_forward_on_29_march_2026_and_falls_back_on_25_october() {
        let berlin = named("Europe/Berlin").unwrap();
        // The same UTC time of day, the day before and the day of the change.
        assert_eq!(local_hour(&berlin, at("2026-03-28T21:30:00Z")), 22.5);
        assert_eq!(local_hour(&berlin, at("2026-03-29T21:30:00Z")), 23.5);
        // Across the change itself: 02:00 CET does not exist, 01:00 UTC is 03:00 CEST.
        assert_eq!(
            local_hour(&berlin, at("2026-03-29T00:59:00Z")),
            1.0 + 59.0 / 60.0
        );
        assert_eq!(local_hour(&berlin, at("2026-03-29T01:00:00Z")), 3.0);
        assert_eq!(local_hour(&berlin, at("2026-10-24T05:30:00Z")), 7.5);
        assert_eq!(local_hour(&berlin, at("2026-10-25T05:30:00Z")), 6.5);
        // 02:30 happens twice on 25 October: at 00:30 UTC (CEST) and 01:30 UTC (CET).
        assert_eq!(local_hour(&berlin, at("2026-10-25T00:30:00Z")), 2.5);
        assert_eq!(local_hour(&berlin, at("2026-10-25T01:30:00Z")), 2.5);
    }

    #[test]
    fn new_york_changes_on_its_own_dates() {
        let ny = named("America/New_York").unwrap();
        // 8 March 2026: EST (−5) to EDT (−4); 1 November: back.
        assert_eq!(local_hour(&ny, at("2026-03-07T03:30:00Z")), 22.5);
        assert_eq!(local_hour(&ny, at("2026-03-09T03:30:00Z")), 23.5);
        assert_eq!(local_hour(&ny, at("2026-10-31T11:30:00Z")), 7.5);
        assert_eq!(local_hour(&ny, at("2026-11-02T11:30:00Z")), 6.5);
        // Berlin has not changed yet on 9 March: the zones are not offsets.
        let berlin = named("Europe/Berlin").unwrap();
        assert_eq!(local_hour(&berlin, at("2026-03-09T03:30:00Z")), 4.5);
    }

    #[test]
    fn names_are_looked_up_in_the_bundled_database_only() {
        assert_eq!(named("utc").unwrap(), TimeZone::UTC);
        assert_eq!(
            named("asia/shanghai").unwrap().iana_name(),
            Some("Asia/Shanghai")
        );
        assert_eq!(
            named("Europe/Berlín").unwrap_err().to_string(),
            "expected an IANA time zone name such as \"Europe/Berlin\" or \"America/New_York\", found \"Europe/Berlín\""
        );
        assert!(named("").is_err());
        assert!(named("+05:30").is_err(), "an offset is not a zone");
        assert_eq!(label(&named("Europe/Berlin").unwrap()), "Europe/Berlin");
        assert_eq!(
            configured(Some("America/New_York")).unwrap().iana_name(),
            Some("America/New_York")
        );
        // The machine's zone always resolves (UTC when it names none).
        let _ = configured(None).unwrap();
    }
}
