//! The crate graph is the one ARCHITECTURE.md draws ("Crates"): the table
//! there is read, `cargo metadata` is asked what the manifests say, and the
//! two must agree — every workspace crate listed once, in its folder, with
//! exactly the robobrain crates it depends on, each of a lower layer; a
//! development dependency reaching no higher than a normal one may; the
//! modules column is the crate's `lib.rs`. And inside every crate the
//! folders (top-level modules) import one another in one direction only.
//! No production function is longer than a hundred lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::root;

/// One row of ARCHITECTURE.md's crate table.
#[derive(Debug)]
struct Row {
    layer: u32,
    folder: String,
    modules: BTreeSet<String>,
    depends_on: BTreeSet<String>,
}

/// The names in backticks in a table cell (`—` is none).
fn names(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The crate table under "## Crates", by crate name.
fn table() -> BTreeMap<String, Row> {
    let path = root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let section = text
        .split("\n## Crates\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Crates` section");
    let section = section.split("\n## ").next().unwrap();
    let mut rows = BTreeMap::new();
    let mut header_seen = false;
    for (n, line) in section.lines().enumerate() {
        if !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if !header_seen {
            assert_eq!(
                cells,
                ["layer", "crate", "folder", "modules", "depends on"],
                "ARCHITECTURE.md, Crates: the table's header"
            );
            header_seen = true;
            continue;
        }
        if cells.iter().all(|c| c.chars().all(|ch| ch == '-')) {
            continue;
        }
        assert_eq!(
            cells.len(),
            5,
            "ARCHITECTURE.md, Crates, row {n}: five cells: {line}"
        );
        let name = names(cells[1]).into_iter().next().unwrap();
        let row = Row {
            layer: cells[0].parse().unwrap_or_else(|_| {
                panic!(
                    "ARCHITECTURE.md, Crates, {name}: layer `{}` is not a number",
                    cells[0]
                )
            }),
            folder: names(cells[2]).into_iter().next().unwrap(),
            modules: names(cells[3]),
            depends_on: names(cells[4]),
        };
        assert!(
            rows.insert(name.clone(), row).is_none(),
            "{name} listed twice"
        );
    }
    assert!(!rows.is_empty(), "ARCHITECTURE.md, Crates: no table");
    rows
}

/// A workspace crate as its manifest says it.
#[derive(Debug)]
struct Package {
    folder: String,
    normal: BTreeSet<String>,
    dev: BTreeSet<String>,
}

fn metadata() -> BTreeMap<String, Package> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut packages = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap());
        let folder = manifest
            .parent()
            .and_then(|d| d.strip_prefix(root()).ok())
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap();
        let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
        for d in p["dependencies"].as_array().unwrap() {
            let dep = d["name"].as_str().unwrap();
            if !dep.starts_with("robobrain-") {
                continue;
            }
            if d["kind"].as_str() == Some("dev") {
                dev.insert(dep.to_string());
            } else {
                normal.insert(dep.to_string());
            }
        }
        packages.insert(
            name,
            Package {
                folder,
                normal,
                dev,
            },
        );
    }
    packages
}

/// The top-level modules a `lib.rs` declares (`mod x;`, `pub mod x;`,
/// `pub mod x {`), its tests (`#[cfg(test)]`) left out.
fn lib_modules(lib: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(lib).unwrap();
    let mut previous = "";
    let mut modules = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            && previous.trim() != "#[cfg(test)]"
        {
            let name = rest.trim_end_matches(';').trim_end_matches('{').trim();
            modules.insert(name.to_string());
        }
        previous = line;
    }
    modules
}

#[test]
fn the_crate_graph_is_the_one_architecture_md_draws() {
    let table = table();
    let packages = metadata();
    let listed: BTreeSet<&String> = table.keys().collect();
    let built: BTreeSet<&String> = packages.keys().collect();
    assert_eq!(
        listed, built,
        "ARCHITECTURE.md's crate table and the workspace's members differ"
    );
    for (name, p) in &packages {
        let row = &table[name];
        assert_eq!(row.folder, p.folder, "{name}: the folder");
        assert_eq!(
            row.depends_on, p.normal,
            "{name}: the robobrain crates it depends on (ARCHITECTURE.md's last column against {}/Cargo.toml)",
            p.folder
        );
        for dep in p.normal.iter().chain(&p.dev) {
            let below = table[dep].layer;
            assert!(
                below < row.layer,
                "{name} (layer {}) depends on {dep} (layer {below}): a crate may only depend on lower layers",
                row.layer
            );
        }
        let lib = root().join(&p.folder).join("src/lib.rs");
        assert_eq!(
            row.modules,
            lib_modules(&lib),
            "{name}: the modules column against {}",
            lib.display()
        );
    }
}

/// `code` with its comments and the insides of its string and character
/// literals blanked, every line kept where it was: what is left are the
/// braces, names and paths the compiler reads.
fn blank_literals(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    // Everything from `from` up to `to` becomes its newlines alone.
    let blank = |out: &mut String, from: usize, to: usize| {
        out.extend(chars[from..to].iter().filter(|c| **c == '\n'));
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == '*' && chars[j + 1] == '/')
                .map_or(chars.len(), |j| j + 2);
            blank(&mut out, i, end);
            i = end;
        } else if (c == 'r' || (c == 'b' && next == Some('r'))) && !word_before && {
            let from = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[from.min(chars.len())..]
                .iter()
                .take_while(|c| **c == '#')
                .count();
            chars.get(from + hashes) == Some(&'"')
        } {
            // A raw string: r"…", r#"…"#, br"…".
            let from = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[from..].iter().take_while(|c| **c == '#').count();
            let body = from + hashes + 1;
            let end = (body..chars.len())
                .find(|&j| {
                    chars[j] == '"'
                        && chars[j + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|c| **c == '#')
                            .count()
                            == hashes
                })
                .map_or(chars.len(), |j| j + 1 + hashes);
            out.push_str("\"\"");
            blank(&mut out, i, end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(chars.len());
            out.push_str("\"\"");
            blank(&mut out, i, end);
            i = end;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{7f}'), or a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 3..chars.len().min(i + 12))
                    .find(|&j| chars[j] == '\'')
                    .map(|j| j + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            if let Some(end) = end {
                out.push_str("' '");
                i = end;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `src` with the test modules cut out: a `#[cfg(test)]` item and the
/// files only tests compile (declared `#[cfg(test)] mod x;`); comments and
/// the insides of literals blanked ([`blank_literals`]), lines kept in place.
fn production_sources(src: &Path) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    let mut test_only = BTreeSet::new();
    let mut texts = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let dir = if f
            .file_name()
            .is_some_and(|n| n == "lib.rs" || n == "mod.rs")
        {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        let blanked = blank_literals(&text);
        // The raw line (for `#[path = "…"]`) beside the blanked one.
        let mut lines = text.lines().zip(blanked.lines()).peekable();
        let mut kept = String::new();
        while let Some((_, line)) = lines.next() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                kept.push('\n');
                // The item that follows (attributes first) is test code.
                while let Some((raw, next)) = lines.peek() {
                    if let Some(path) = raw
                        .trim_start()
                        .strip_prefix("#[path = \"")
                        .and_then(|r| r.strip_suffix("\"]"))
                    {
                        test_only.insert(f.parent().unwrap().join(path));
                    }
                    if next.trim_start().starts_with("#[") {
                        lines.next();
                        kept.push('\n');
                    } else {
                        break;
                    }
                }
                let Some((_, item)) = lines.next() else { break };
                kept.push('\n');
                let item = item.trim_start();
                if let Some(name) = item
                    .strip_prefix("mod ")
                    .or_else(|| item.strip_prefix("pub mod "))
                    .and_then(|r| r.strip_suffix(';'))
                {
                    test_only.insert(dir.join(format!("{name}.rs")));
                    test_only.insert(dir.join(name));
                    continue;
                }
                // Skip to the end of the item's braces (or its `;`).
                let mut depth = item.matches('{').count() as i64 - item.matches('}').count() as i64;
                if depth == 0 && item.ends_with(';') {
                    continue;
                }
                while depth > 0 || !item.contains('{') && depth == 0 {
                    let Some((_, l)) = lines.next() else { break };
                    kept.push('\n');
                    depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                    if depth <= 0 && l.contains('}') {
                        break;
                    }
                }
                continue;
            }
            kept.push_str(line);
            kept.push('\n');
        }
        texts.push((f.clone(), kept));
    }
    texts
        .into_iter()
        .filter(|(f, _)| !test_only.iter().any(|t| f == t || f.starts_with(t)))
        .collect()
}

/// The functions in `code` (production code from [`production_sources`])
/// with their names, first lines (1-based) and lengths in lines, from the
/// `fn` line to the closing brace. Declarations without a body are left out.
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("fn ").map(|i| i + from) {
        from = at + 3;
        let word_before =
            at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let name: String = code[at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if word_before || name.is_empty() {
            continue;
        }
        // The body starts at the first `{` unless a `;` ends a declaration first.
        let Some(open) = code[at..].find(['{', ';']).map(|i| i + at) else {
            break;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0i64;
        let mut close = None;
        for (i, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { break };
        found.push((name, line_of(at), line_of(close) - line_of(at) + 1));
    }
    found
}

/// The longest a production function may be (issue 37: the engine a driver
/// of small machines, no function a newcomer has to scroll through).
const MAX_FUNCTION_LINES: usize = 100;

#[test]
fn no_production_function_is_longer_than_a_hundred_lines() {
    let mut long = Vec::new();
    for row in table().values() {
        for (path, code) in production_sources(&root().join(&row.folder).join("src")) {
            for (name, line, length) in function_lengths(&code) {
                if length > MAX_FUNCTION_LINES {
                    let at = path
                        .strip_prefix(root())
                        .unwrap_or(&path)
                        .display()
                        .to_string();
                    long.push(format!("{at}:{line}: fn {name} is {length} lines"));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "production functions longer than {MAX_FUNCTION_LINES} lines (split them into named steps):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_reader_sees_bodies_not_literals() {
    let code = "fn a() {\n    let s = \"}{ fn b() {\";\n    let c = ('{', '\\'', '\"');\n    // }\n}\ntrait T { fn d(&self); }\nfn e<'x>(v: &'x str) -> impl Fn() {\n    move || {}\n}\n";
    let blanked = blank_literals(code);
    assert_eq!(blanked.lines().count(), code.lines().count());
    assert_eq!(
        function_lengths(&blanked),
        vec![("a".to_string(), 1, 5), ("e".to_string(), 7, 3)]
    );
    let raw = "fn r() {\n    let s = r#\"\n}\"\n\"#;\n}\n";
    assert_eq!(
        function_lengths(&blank_literals(raw)),
        vec![("r".to_string(), 1, 5)]
    );
}

/// The modules of the crate `code` names as `crate::x`.
fn crate_refs(code: &str) -> BTreeSet<String> {
    refs_after(code, "crate::")
}

/// The names `code` reaches through `prefix` (`crate::`, `crate::hci::`,
/// `super::`): the first name after it, or each element's first name in a
/// `prefix{a, b::c}` group.
fn refs_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // e.g. `robobrain_crate::`, `super::super::`
        }
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d}`: the first name of each element.
            let mut depth = 0;
            let mut element_start = true;
            let mut word = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => element_start = true,
                    c if c.is_alphanumeric() || c == '_' => {
                        if element_start {
                            word.push(c);
                        }
                    }
                    _ => {
                        if !word.is_empty() {
                            refs.insert(std::mem::take(&mut word));
                            element_start = false;
                        }
                    }
                }
            }
            if !word.is_empty() {
                refs.insert(word);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                refs.insert(name);
            }
        }
    }
    refs
}

/// A cycle in `graph`, if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == m).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n.as_str()) {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, graph, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// For every folder of the crate in `folder` (its `src` and each module's
/// folder below it), the modules the folder holds and which of them each
/// imports (outside its tests): `crate::path::to::folder::x` from anywhere
/// inside a sibling, `super::x` from a sibling's own file.
fn folder_graphs(folder: &str) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = root().join(folder).join("src");
    let sources = production_sources(&src);
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    // Each file, as the path of folders from `src` to it.
    for (file, code) in &sources {
        let rel = file.strip_prefix(&src).unwrap();
        let parts: Vec<String> = rel
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        // The file is inside the sibling `parts[depth]` of the folder `parts[..depth]`.
        for depth in 0..parts.len() {
            let sibling = &parts[depth];
            if depth + 1 == parts.len()
                && (sibling == "lib" || sibling == "main" || sibling == "mod")
            {
                continue;
            }
            let folder_path = parts[..depth].join("::");
            let prefix = if folder_path.is_empty() {
                "crate::".to_string()
            } else {
                format!("crate::{folder_path}::")
            };
            let mut refs = refs_after(code, &prefix);
            if depth + 1 == parts.len() {
                refs.extend(refs_after(code, "super::"));
            }
            let graph = graphs.entry(folder_path).or_default();
            let entry = graph.entry(sibling.clone()).or_default();
            entry.extend(refs.into_iter().filter(|r| r != sibling));
        }
    }
    // Only edges to modules the folder holds.
    for graph in graphs.values_mut() {
        let modules: BTreeSet<String> = graph.keys().cloned().collect();
        for targets in graph.values_mut() {
            targets.retain(|t| modules.contains(t));
        }
    }
    graphs
}

/// The top-level modules of the crate in `folder`, and which of them each
/// imports (outside its tests).
fn module_graph(folder: &str) -> BTreeMap<String, BTreeSet<String>> {
    folder_graphs(folder).remove("").unwrap_or_default()
}

#[test]
fn inside_every_crate_the_modules_import_one_another_one_way() {
    for row in table().values() {
        for (path, graph) in folder_graphs(&row.folder) {
            if let Some(cycle) = find_cycle(&graph) {
                let at = if path.is_empty() {
                    String::new()
                } else {
                    format!(" in `{path}`")
                };
                panic!(
                    "{}{at}: the modules import each other in a circle: {} (ARCHITECTURE.md, Layers)",
                    row.folder,
                    cycle.join(" → ")
                );
            }
        }
    }
}

#[test]
fn the_reader_of_imports_sees_what_the_compiler_sees() {
    // The checks above are only as good as this reader.
    let code = "use crate::{protocol::Event, world::{self, World}, text};\nlet x = crate::engine::Engine::new();\nrobobrain_crate::nope;";
    let refs = crate_refs(code);
    assert_eq!(
        refs,
        ["engine", "protocol", "text", "world"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
    // The core's graph is read, and holds what the table says it does.
    let core = module_graph("src-core");
    assert!(core["session"].contains("engine"), "{core:?}");
    let kernel = module_graph("src-kernel");
    assert!(kernel["brain"].contains("react"), "{kernel:?}");
    assert!(!kernel["react"].contains("brain"), "{kernel:?}");
    // A folder's own modules are read too: `hci::intent` names `verb`.
    let hci = &folder_graphs("src-home")["hci"];
    assert!(hci["intent"].contains("verb"), "{hci:?}");
    assert!(!hci["intent"].contains("summary"), "{hci:?}");
}
