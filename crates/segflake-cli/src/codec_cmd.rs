//! `segflake encode`, `segflake obfuscate` and `segflake deobfuscate`.

use crate::cli::{EncodeArgs, ObfuscateArgs};
use crate::error::CliError;
use crate::ids::{input_format, inputs, output_format, parse_id, InputFormat};
use crate::output::{JsonObject, Out};
use segflake::{Format, Obfuscator};

pub const ENCODE_HELP: &str = "\
segflake encode: write IDs in another text form

Usage:
  segflake encode ID... --format F [--from F] [--json]
  segflake encode - --format F      (IDs from standard input, one per line)

  --format F     decimal, base62 (11 characters) or base32 (Crockford, 13 characters);
                 base62 and base32 are zero-padded, so they sort like the numbers
  --from F       how the input IDs are written: auto (default), decimal, base62, base32
  --json         one JSON object per ID: input, id, format, decimal
  --help         this help
";

pub const OBFUSCATE_HELP: &str = "\
segflake obfuscate / deobfuscate: the keyed, reversible permutation of IDs

Usage:
  segflake obfuscate ID... --key HEX32 [--format F] [--from F] [--json]
  segflake deobfuscate ID... --key HEX32 [--format F] [--from F] [--json]

Maps every ID below 2^63 to another ID below 2^63 (Speck64/128 with cycle-walking), so
sequential IDs shown to the public do not reveal volume or order; deobfuscate with the
same key gives the original back. The same key gives the same mapping in every
segflake language binding.

  --key HEX32    the 16-byte key as 32 hexadecimal digits, bytes in order
                 (if absent, the SEGFLAKE_OBFUSCATION_KEY environment variable)
  --format F     output form: decimal (default), base62, base32
  --from F       how the input IDs are written: auto (default), decimal, base62, base32
  --json         one JSON object per ID: input, id, format, decimal
  --help         this help
";

pub fn encode(args: EncodeArgs) -> Result<(), CliError> {
    let Some(name) = args.format else {
        return Err(CliError::usage_for(
            "encode",
            "--format is required: decimal, base62 or base32",
        ));
    };
    let format = Format::from_name(&name)?;
    let from = input_format(args.from.as_deref())?;
    each_id("encode", args.ids, from, args.json, format, Ok)
}

pub fn obfuscate(args: ObfuscateArgs) -> Result<(), CliError> {
    obfuscation("obfuscate", args, true)
}

pub fn deobfuscate(args: ObfuscateArgs) -> Result<(), CliError> {
    obfuscation("deobfuscate", args, false)
}

fn obfuscation(command: &'static str, args: ObfuscateArgs, forward: bool) -> Result<(), CliError> {
    let key_text = match args.key {
        Some(k) => k,
        None => std::env::var("SEGFLAKE_OBFUSCATION_KEY").map_err(|_| {
            CliError::usage_for(
                command,
                "no key given: pass --key with 32 hexadecimal digits (16 bytes), or set \
                 SEGFLAKE_OBFUSCATION_KEY",
            )
        })?,
    };
    let key = parse_hex(&key_text).map_err(|m| CliError::usage_for(command, m))?;
    let output = output_format(args.format.as_deref(), Format::Decimal)?;
    let from = input_format(args.from.as_deref())?;
    let o = Obfuscator::from_key_bytes(&key)?;
    each_id(command, args.ids, from, args.json, output, |id| {
        Ok(if forward {
            o.obfuscate(id)?
        } else {
            o.deobfuscate(id)?
        })
    })
}

/// Hexadecimal digits → bytes, in order. The length is checked by the obfuscator
/// (16 bytes), so a short key gets the same error as in every binding.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let t = text.trim();
    if let Some((pos, c)) = t.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "the key has {c:?} at position {pos}, which is not a hexadecimal digit (allowed \
             0-9, a-f, A-F; the key is 32 hexadecimal digits = 16 bytes)"
        ));
    }
    if !t.len().is_multiple_of(2) {
        return Err(format!(
            "the key has an odd number of hexadecimal digits ({}); it must be 32 digits (16 bytes)",
            t.len()
        ));
    }
    Ok(t.as_bytes()
        .chunks(2)
        .map(|pair| {
            let d = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
            (d(pair[0]) << 4) | d(pair[1])
        })
        .collect())
}

/// Runs `encode`, `obfuscate` or `deobfuscate` over every input ID.
fn each_id(
    command: &'static str,
    ids: Vec<String>,
    from: InputFormat,
    json: bool,
    output: Format,
    map: impl Fn(u64) -> Result<u64, CliError>,
) -> Result<(), CliError> {
    let texts = inputs(command, ids)?;
    let mut out = Out::new();
    for text in &texts {
        let (id, _) = parse_id(command, text, from)?;
        let mapped = map(id)?;
        let encoded = output.encode(mapped);
        if json {
            out.json(
                JsonObject::new()
                    .str("input", text)
                    .str("id", &encoded)
                    .str("format", output.name())
                    .str("decimal", &mapped.to_string()),
            )?;
        } else {
            out.line(&encoded)?;
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::parse_hex;

    #[test]
    fn keys() {
        let k = parse_hex("000102030405060708090a0b0c0d0eFF").unwrap();
        assert_eq!(k.len(), 16);
        assert_eq!((k[0], k[10], k[15]), (0, 10, 0xff));
        assert_eq!(parse_hex("0001").unwrap(), vec![0, 1]);
        let e = parse_hex("000102030405060708090a0b0c0d0eFG").unwrap_err();
        assert!(e.contains("position 31"), "{e}");
        assert!(parse_hex("000").unwrap_err().contains("odd"));
        assert!(parse_hex("é0").is_err());
    }
}
