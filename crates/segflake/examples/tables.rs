//! Prints the core's tables as JSON: the option, record and registry tables
//! ([`segflake::catalog::tables_json`]) and, under `"errors"`, every error kind (its code, class
//! name, summary, C status and the data it carries, in status order). The input of `scripts/gen_declarations.py`,
//! which writes the TypeScript and Python declarations from them.
use segflake::error::DetailKind;
use segflake::host::json_string;
use segflake::ErrorKind;

fn main() {
    let tables = segflake::catalog::tables_json();
    let errors: Vec<String> = ErrorKind::ALL
        .iter()
        .map(|k| {
            let details: Vec<String> = k
                .detail_fields()
                .iter()
                .map(|(name, kind)| {
                    let kind = match kind {
                        DetailKind::Number => "number",
                        DetailKind::Text => "text",
                    };
                    format!("{{\"name\": {}, \"kind\": \"{kind}\"}}", json_string(name))
                })
                .collect();
            format!(
                "{{\"code\": {}, \"class_name\": {}, \"summary\": {}, \"status\": {}, \"details\": [{}]}}",
                json_string(k.code()),
                json_string(k.class_name()),
                json_string(k.summary()),
                k.status(),
                details.join(", ")
            )
        })
        .collect();
    let body = tables
        .strip_suffix('}')
        .expect("tables_json is one JSON object");
    println!("{body}, \"errors\": [{}]}}", errors.join(", "));
}
