//! A keyed, reversible permutation of the 63-bit ID space, for IDs shown to the public.
//!
//! # Construction
//! Speck64/128 (Beaulieu et al., 2013: 32-bit words, 27 rounds, 128-bit key) is a
//! block cipher, hence a permutation `E_k` of all 2^64 values. To permute the 2^63 values
//! below 2^63 we cycle-walk: apply `E_k` repeatedly until the result is below 2^63.
//!
//! Why this is a bijection on `[0, 2^63)`: follow the cycle of `E_k` that contains `x`.
//! Cycle-walking maps `x` to the next element of that cycle that lies in the set, and
//! decryption walks the same cycle backwards to the previous one; each element of the
//! set therefore has exactly one image and one preimage. Since half of all values are in
//! the set, the expected number of cipher calls is 2, and a walk is always finite (the
//! cycle returns to `x` itself at the latest).
//!
//! The key is 16 bytes, read as four little-endian 32-bit words `k[0..4]` (the Speck
//! paper's byte order), so the same key gives the same mapping in every language.
//! This hides volume and order from casual observers; it is not a substitute for
//! authorisation.

use crate::error::{quoted_char, Error, Result};

const ROUNDS: usize = 27;
const LIMIT: u64 = 1 << 63;

/// A keyed permutation of `[0, 2^63)`.
#[derive(Clone)]
pub struct Obfuscator {
    round_keys: [u32; ROUNDS],
}

impl std::fmt::Debug for Obfuscator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Obfuscator { .. }")
    }
}

impl Obfuscator {
    /// An obfuscator with a 16-byte key.
    pub fn new(key: [u8; 16]) -> Obfuscator {
        let w = |i: usize| {
            u32::from_le_bytes([key[4 * i], key[4 * i + 1], key[4 * i + 2], key[4 * i + 3]])
        };
        let mut k = w(0);
        let mut l = [w(1), w(2), w(3)];
        let mut round_keys = [0u32; ROUNDS];
        for (i, rk) in round_keys.iter_mut().enumerate() {
            *rk = k;
            let j = i % 3;
            l[j] = (k.wrapping_add(l[j].rotate_right(8))) ^ (i as u32);
            k = k.rotate_left(3) ^ l[j];
        }
        Obfuscator { round_keys }
    }

    /// An obfuscator from a key given as bytes, which must be exactly 16 long.
    pub fn from_key_bytes(key: &[u8]) -> Result<Obfuscator> {
        let key: [u8; 16] = key.try_into().map_err(|_| {
            Error::invalid_argument(
                "key",
                format!(
                    "got {} bytes; a key is exactly 16 bytes (128 bits) or a string of 32 hex \
                     digits",
                    key.len()
                ),
            )
        })?;
        Ok(Obfuscator::new(key))
    }

    /// An obfuscator from a key written as exactly 32 hex digits (either case), as every
    /// binding accepts it.
    pub fn from_hex_key(hex: &str) -> Result<Obfuscator> {
        let refuse = |why: String| {
            Error::invalid_argument(
                "key",
                format!("{why}; a key string is exactly 32 hex digits (16 bytes: 0-9, a-f, A-F)"),
            )
        };
        let n = hex.chars().count();
        if n != 32 {
            return Err(refuse(format!("got a string of {n} characters")));
        }
        if let Some((i, c)) = hex
            .chars()
            .enumerate()
            .find(|(_, c)| !c.is_ascii_hexdigit())
        {
            return Err(refuse(format!(
                "{c} at position {i} is not a hex digit",
                c = quoted_char(c)
            )));
        }
        let key = u128::from_str_radix(hex, 16).map_err(|e| refuse(e.to_string()))?;
        Ok(Obfuscator::new(key.to_be_bytes()))
    }

    /// Maps an ID below 2^63 to another ID below 2^63.
    pub fn obfuscate(&self, id: u64) -> Result<u64> {
        check(id)?;
        let mut x = self.encrypt_block(id);
        while x >= LIMIT {
            x = self.encrypt_block(x);
        }
        Ok(x)
    }

    /// The inverse of [`obfuscate`](Obfuscator::obfuscate).
    pub fn deobfuscate(&self, id: u64) -> Result<u64> {
        check(id)?;
        let mut x = self.decrypt_block(id);
        while x >= LIMIT {
            x = self.decrypt_block(x);
        }
        Ok(x)
    }

    /// One Speck64/128 encryption. The block is `(x, y)` = (high word, low word).
    pub fn encrypt_block(&self, block: u64) -> u64 {
        let (mut x, mut y) = ((block >> 32) as u32, block as u32);
        for &k in &self.round_keys {
            x = (x.rotate_right(8).wrapping_add(y)) ^ k;
            y = y.rotate_left(3) ^ x;
        }
        (u64::from(x) << 32) | u64::from(y)
    }

    /// One Speck64/128 decryption.
    pub fn decrypt_block(&self, block: u64) -> u64 {
        let (mut x, mut y) = ((block >> 32) as u32, block as u32);
        for &k in self.round_keys.iter().rev() {
            y = (y ^ x).rotate_right(3);
            x = ((x ^ k).wrapping_sub(y)).rotate_left(8);
        }
        (u64::from(x) << 32) | u64::from(y)
    }
}

fn check(id: u64) -> Result<()> {
    if id >= LIMIT {
        Err(Error::invalid_argument(
            "id",
            format!("{id} is not below 2^63; obfuscation maps 0..=9223372036854775807"),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hex_key_is_its_sixteen_bytes_and_refusals_say_where() {
        let bytes: Vec<u8> = (0..16).collect();
        let hex = Obfuscator::from_hex_key("000102030405060708090a0B0c0d0e0F").unwrap();
        let raw = Obfuscator::from_key_bytes(&bytes).unwrap();
        assert_eq!(hex.obfuscate(12345).unwrap(), raw.obfuscate(12345).unwrap());
        let short = Obfuscator::from_hex_key("0011").unwrap_err().to_string();
        assert!(
            short.contains("got a string of 4 characters; a key string is exactly 32 hex digits")
        );
        let bad = Obfuscator::from_hex_key(&format!("{}x", "0".repeat(31))).unwrap_err();
        assert!(
            bad.to_string()
                .contains("'x' at position 31 is not a hex digit"),
            "{bad}"
        );
        let e = Obfuscator::from_key_bytes(&bytes[..15])
            .unwrap_err()
            .to_string();
        assert!(e.contains("got 15 bytes; a key is exactly 16 bytes"), "{e}");
    }

    #[test]
    fn speck64_128_paper_vector() {
        // Speck64/128: key 1b1a1918 13121110 0b0a0908 03020100 (k3..k0),
        // plaintext 3b726574 7475432d, ciphertext 8c6fa548 454e028b.
        let key_words: [u32; 4] = [0x0302_0100, 0x0b0a_0908, 0x1312_1110, 0x1b1a_1918];
        let mut key = [0u8; 16];
        for (i, w) in key_words.iter().enumerate() {
            key[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        let o = Obfuscator::new(key);
        let pt = 0x3b72_6574_7475_432d;
        let ct = 0x8c6f_a548_454e_028b;
        assert_eq!(o.encrypt_block(pt), ct);
        assert_eq!(o.decrypt_block(ct), pt);
    }

    #[test]
    fn round_trip_and_range() {
        let o = Obfuscator::new(*b"segflake-test-k!");
        for id in (0..10_000u64).chain([LIMIT - 1, LIMIT - 2, 1 << 62]) {
            let x = o.obfuscate(id).unwrap();
            assert!(x < LIMIT);
            assert_eq!(o.deobfuscate(x).unwrap(), id);
        }
        assert!(o.obfuscate(LIMIT).is_err());
        assert!(Obfuscator::from_key_bytes(&[0; 15]).is_err());
    }
}
