//! The wire's types as TypeScript declarations (feature `ts`, ts-rs): the
//! page's `ui/src/generated/protocol.ts` is this text, and a test fails when
//! the two differ, so the page is compiled (`tsc`, in `./x test`) against
//! what the Rust types really send. Regenerate it with
//! `ROBOBRAIN_WRITE_TS=1 cargo test -p robobrain-wire --features ts typescript`.

use std::collections::BTreeMap;

use ts_rs::{Config, TS, TypeVisitor};

use super::ServerMessage;

/// Every declaration a type needs, by name.
struct Collect<'a> {
    cfg: &'a Config,
    decls: BTreeMap<String, String>,
}

impl TypeVisitor for Collect<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if T::output_path().is_none() {
            // Not a declared type (a number, a string, a JSON value).
            return;
        }
        let name = T::ident(self.cfg);
        if self.decls.contains_key(&name) {
            return;
        }
        self.decls.insert(name, T::decl(self.cfg));
        T::visit_dependencies(self);
    }
}

/// The TypeScript file: a header, then `export` of every type a face is
/// sent (`ServerMessage` and all it holds), sorted by name. Integers are
/// `number` (no count on the wire comes near 2^53).
#[must_use]
pub fn declarations() -> String {
    let cfg = Config::new().with_large_int("number");
    let mut collect = Collect {
        cfg: &cfg,
        decls: BTreeMap::new(),
    };
    collect.visit::<ServerMessage>();
    let mut out = String::from(
        "// Generated from robobrain's Rust wire types (src-wire/src/protocol/typescript.rs,\n\
         // ts-rs): do not edit. A test fails when this file and the Rust types differ;\n\
         // ROBOBRAIN_WRITE_TS=1 cargo test -p robobrain-wire --features ts typescript\n\
         // writes it again.\n\n",
    );
    for decl in collect.decls.values() {
        out.push_str("export ");
        out.push_str(decl);
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_generated_protocol_is_the_rust_types() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../ui/src/generated/protocol.ts"
        );
        let now = declarations();
        assert!(now.contains("export type ServerMessage = "), "{now}");
        assert!(now.contains("export type Snapshot = "), "{now}");
        if std::env::var_os("ROBOBRAIN_WRITE_TS").is_some() {
            std::fs::write(path, &now).unwrap();
        }
        let file = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            file == now,
            "{path} is not what the Rust wire types declare: run\n  \
             ROBOBRAIN_WRITE_TS=1 cargo test -p robobrain-wire --features ts typescript\n\
             then `cd ui && npm run build` (the page must still compile against them)"
        );
    }
}
