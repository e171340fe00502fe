//! Prints the core's option and record tables as JSON ([`segflake::catalog::tables_json`]): the
//! input of `scripts/gen_declarations.py`, which writes the TypeScript and Python
//! declarations from them.
fn main() {
    println!("{}", segflake::catalog::tables_json());
}
