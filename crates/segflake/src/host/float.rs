//! A double as decimal text, exactly as Rust's `{}` writes it (the shortest digits that read
//! back as the same double, never an exponent), without `core::fmt`'s float formatting:
//! the messages that quote a number (`got the number 1.5`) are the only floats a
//! WebAssembly module formats, and `core`'s Grisu and Dragon tables weigh ~20 kB there.
//!
//! The digits come from the exact bignum method `core` falls back to (Steele & White's
//! Dragon4 in its free-format mode): the same digits, rounded the same way.
//!
//! Reading goes the other way without `core`'s `dec2flt` (its code and power-of-five tables
//! weigh ~14 kB gzipped there): [`parse_f64`] gives the double nearest to the decimal, as
//! `str::parse::<f64>` does, by exact big-integer arithmetic.

use std::cmp::Ordering;
use std::fmt;

/// An unsigned integer of 32-bit limbs, least significant first.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn new(v: u64) -> Big {
        Big(vec![v as u32, (v >> 32) as u32])
    }

    fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let t = u64::from(*limb) * u64::from(m) + carry;
            *limb = t as u32;
            carry = t >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow2(&mut self, mut n: u32) {
        while n > 16 {
            self.mul_small(1 << 16);
            n -= 16;
        }
        self.mul_small(1 << n);
    }

    fn add_small(&mut self, a: u32) {
        let mut carry = u64::from(a);
        for limb in &mut self.0 {
            let t = u64::from(*limb) + carry;
            *limb = t as u32;
            carry = t >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    /// `self /= d`, returning the remainder.
    fn div_small(&mut self, d: u32) -> u32 {
        let mut rem = 0u64;
        for limb in self.0.iter_mut().rev() {
            let t = rem << 32 | u64::from(*limb);
            *limb = (t / u64::from(d)) as u32;
            rem = t % u64::from(d);
        }
        rem as u32
    }

    fn bit(&self, i: u64) -> bool {
        self.limb((i / 32) as usize) >> (i % 32) & 1 == 1
    }

    /// The number of significant bits (0 for zero).
    fn bit_len(&self) -> u64 {
        (0..self.0.len() as u64 * 32)
            .rev()
            .find(|&i| self.bit(i))
            .map_or(0, |i| i + 1)
    }

    fn limb(&self, i: usize) -> u32 {
        self.0.get(i).copied().unwrap_or(0)
    }

    fn plus(&self, other: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len().max(other.0.len()) + 1);
        let mut carry = 0u64;
        for i in 0..self.0.len().max(other.0.len()) {
            let t = u64::from(self.limb(i)) + u64::from(other.limb(i)) + carry;
            out.push(t as u32);
            carry = t >> 32;
        }
        out.push(carry as u32);
        Big(out)
    }

    /// `self -= other`, for `self >= other`.
    fn sub(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let t = i64::from(*limb) - i64::from(other.limb(i)) - borrow;
            *limb = t as u32;
            borrow = i64::from(t < 0);
        }
    }

    fn compare(&self, other: &Big) -> Ordering {
        let len = self.0.len().max(other.0.len());
        (0..len)
            .rev()
            .map(|i| self.limb(i).cmp(&other.limb(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

/// The shortest digits `d` and exponent `k` of a finite positive `x`: `x` is the double
/// nearest to `0.d × 10^k` (ties between two shortest candidates go to the nearer one,
/// exact halves up).
fn shortest(x: f64) -> (Vec<u8>, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    // x = mant × 2^exp, its neighbours halfway down and up at (mant − minus) and
    // (mant + plus) × 2^exp; both count as x when the mantissa is even (round half to even).
    let (mant, exp) = if biased == 0 {
        (fraction << 1, -1075)
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    let inclusive = mant & 1 == 0;
    let (mant, minus, plus, exp) = if biased == 0 {
        (mant, 1, 1, exp)
    } else if mant == 1 << 52 {
        // The next double down is half as far away as the next one up.
        (mant << 2, 1, 2, exp - 2)
    } else {
        (mant << 1, 1, 1, exp - 1)
    };
    let within = if inclusive {
        Ordering::Greater
    } else {
        Ordering::Equal
    };
    let below = |a: &Big, b: &Big| a.compare(b) < within;

    let (mut mant, mut minus, mut plus) = (Big::new(mant), Big::new(minus), Big::new(plus));
    let mut scale = Big::new(1);
    if exp < 0 {
        scale.mul_pow2(exp.unsigned_abs());
    } else {
        for b in [&mut mant, &mut minus, &mut plus] {
            b.mul_pow2(exp as u32);
        }
    }
    // k such that high / (scale × 10^k) is in [0.1, 1) (its bounds as `within` says).
    let mut k = 0i32;
    while below(&scale, &mant.plus(&plus)) {
        scale.mul_small(10);
        k += 1;
    }
    loop {
        let mut high = mant.plus(&plus);
        high.mul_small(10);
        if below(&scale, &high) {
            break;
        }
        for b in [&mut mant, &mut minus, &mut plus] {
            b.mul_small(10);
        }
        k -= 1;
    }
    let mut digits = Vec::new();
    loop {
        for b in [&mut mant, &mut minus, &mut plus] {
            b.mul_small(10);
        }
        let mut d = b'0';
        while mant.compare(&scale).is_ge() {
            mant.sub(&scale);
            d += 1;
        }
        digits.push(d);
        let down = below(&mant, &minus);
        let up = below(&scale, &mant.plus(&plus));
        if down || up {
            let round_up = up
                && (!down || {
                    mant.mul_small(2);
                    mant.compare(&scale).is_ge()
                });
            if round_up {
                match digits.iter().rposition(|&c| c != b'9') {
                    Some(i) => {
                        digits[i] += 1;
                        digits[i + 1..].fill(b'0');
                    }
                    None => {
                        digits.fill(b'0');
                        digits[0] = b'1';
                        digits.push(b'0');
                        k += 1;
                    }
                }
            }
            return (digits, k);
        }
    }
}

/// The double nearest to the decimal `text`, rounded half to even, as
/// `text.parse::<f64>()` gives it; `None` where that fails, and for `inf` and `NaN` (which
/// every caller refuses as it would a non-finite result). The syntax is
/// `[+-]digits[.digits][(e|E)[+-]digits]`, with at least one digit before or after the point.
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let (negative, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, b),
    };
    // text = 0.digits... as digits × 10^exp10, without leading zeros.
    let (mut digits, mut exp10, mut seen, mut point) = (Vec::new(), 0i64, false, false);
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                seen = true;
                exp10 -= i64::from(point);
                if !(digits.is_empty() && c == b'0') {
                    digits.push(c - b'0');
                }
            }
            b'.' if !point => point = true,
            _ => break,
        }
        i += 1;
    }
    if !seen {
        return None;
    }
    if let Some(&c) = b.get(i) {
        if c | 0x20 != b'e' {
            return None;
        }
        let after = b.get(i + 1..).unwrap_or_default();
        let (minus, e) = match after.split_first() {
            Some((b'-', rest)) => (true, rest),
            Some((b'+', rest)) => (false, rest),
            _ => (false, after),
        };
        if e.is_empty() || !e.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = e
            .iter()
            .fold(0i64, |n, d| (n * 10 + i64::from(d - b'0')).min(1 << 40));
        exp10 += if minus { -n } else { n };
    }
    // 800 digits decide the rounding of any double (767 can matter); a non-zero digit
    // beyond them only needs to be known to be there.
    if digits.len() > 800 {
        let rest_nonzero = digits[800..].iter().any(|&d| d != 0);
        exp10 += digits.len() as i64 - 800;
        digits.truncate(800);
        if rest_nonzero {
            digits.push(1);
            exp10 -= 1;
        }
    }
    let value = nearest(&digits, exp10);
    Some(if negative { -value } else { value })
}

/// The double nearest to `digits × 10^exp10` (digits without leading zeros).
fn nearest(digits: &[u8], exp10: i64) -> f64 {
    let magnitude = digits.len() as i64 + exp10; // the value is below 10^magnitude
    if digits.is_empty() || magnitude < -324 {
        return 0.0; // below half the smallest double, 2.5e-324
    }
    if magnitude > 310 {
        return f64::INFINITY;
    }
    let mut q = Big(vec![0]);
    for &d in digits {
        q.mul_small(10);
        q.add_small(u32::from(d));
    }
    // value = q × 2^exp2, plus less than one unit of q's last bit when `sticky`.
    let (mut exp2, mut sticky) = (0i64, false);
    if exp10 >= 0 {
        for _ in 0..exp10 {
            q.mul_small(10);
        }
    } else {
        // value = q × 2^s / 5^k × 2^-(s + k): s keeps at least 58 bits in the quotient
        // (log2 5 < 2.322).
        let k = exp10.unsigned_abs();
        let s = (60 + k * 2322 / 1000 + 1).saturating_sub(q.bit_len());
        q.mul_pow2(s as u32);
        for _ in 0..k {
            sticky |= q.div_small(5) != 0;
        }
        exp2 = -((s + k) as i64);
    }
    round_to_f64(&q, exp2, sticky)
}

/// The double nearest to `q × 2^exp2` (plus a fraction of `q`'s last bit when `sticky`),
/// rounded half to even.
fn round_to_f64(q: &Big, exp2: i64, sticky: bool) -> f64 {
    let len = q.bit_len() as i64;
    // The exponent of the lowest bit kept: 53 bits, or fewer below the normal range.
    let mut low = (exp2 + len - 53).max(-1074);
    let shift = low - exp2;
    let bits = |from: i64| (0..53).fold(0u64, |m, j| m | u64::from(q.bit((from + j) as u64)) << j);
    let mut m = if shift <= 0 {
        bits(0) << -shift
    } else {
        let m = bits(shift);
        let half = q.bit((shift - 1) as u64);
        let below = sticky || (0..shift - 1).any(|j| q.bit(j as u64));
        m + u64::from(half && (below || m & 1 == 1))
    };
    if m == 1 << 53 {
        m >>= 1;
        low += 1;
    }
    if m < 1 << 52 {
        return f64::from_bits(m); // subnormal (low is -1074) or zero
    }
    let biased = low + 1075;
    if biased >= 2047 {
        return f64::INFINITY;
    }
    f64::from_bits((biased as u64) << 52 | (m & ((1 << 52) - 1)))
}

/// Writes a finite `x` as `{x}` does.
pub(crate) fn write_f64(out: &mut dyn fmt::Write, x: f64) -> fmt::Result {
    if x.is_sign_negative() {
        out.write_char('-')?;
    }
    let x = x.abs();
    if x == 0.0 {
        return out.write_char('0');
    }
    let (digits, k) = shortest(x);
    let text = |d: &[u8]| std::str::from_utf8(d).unwrap_or_default().to_owned();
    let k = k as isize;
    if k <= 0 {
        out.write_str("0.")?;
        for _ in 0..-k {
            out.write_char('0')?;
        }
        out.write_str(&text(&digits))
    } else if (k as usize) < digits.len() {
        let (int, frac) = digits.split_at(k as usize);
        out.write_str(&text(int))?;
        out.write_char('.')?;
        out.write_str(&text(frac))
    } else {
        out.write_str(&text(&digits))?;
        for _ in digits.len()..k as usize {
            out.write_char('0')?;
        }
        Ok(())
    }
}

/// Writes a finite, whole `x` below 10^21 in magnitude as `{x:.0}` does.
pub(crate) fn write_whole_f64(out: &mut dyn fmt::Write, x: f64) -> fmt::Result {
    if x.is_sign_negative() {
        out.write_char('-')?;
    }
    write!(out, "{}", x.abs() as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(x: f64) -> String {
        let mut s = String::new();
        write_f64(&mut s, x).unwrap();
        s
    }

    #[test]
    fn as_display_writes_them() {
        let mut cases = vec![
            0.0,
            -0.0,
            1.5,
            -1.5,
            0.1,
            0.3,
            1.0 / 3.0,
            2.0 / 3.0,
            1e21,
            1e22,
            1e23,
            123456789012345680000.0,
            9007199254740993.0,
            1e-7,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            4.35,
            0.000001,
            123.456,
            1e300,
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::from_bits(1e23f64.to_bits() - 1),
            f64::from_bits(1e23f64.to_bits() + 1),
        ];
        cases.extend((0..2000).map(|i| 2f64.powi(i - 1074)));
        cases.extend((0..700).map(|i| 10f64.powi(i - 340)));
        // Random bit patterns (xorshift), every exponent range.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            cases.push(f64::from_bits(state));
        }
        for x in cases.into_iter().filter(|x| x.is_finite()) {
            assert_eq!(shown(x), format!("{x}"), "{:#x}", x.to_bits());
        }
    }

    /// The exact decimal `a + b` of two non-negative doubles (each written with every digit).
    fn exact_sum(a: f64, b: f64) -> String {
        let (a, b) = (format!("{a:.1100}"), format!("{b:.1100}"));
        let width = a.len().max(b.len());
        let (a, b) = (format!("{a:0>width$}"), format!("{b:0>width$}"));
        let mut out = Vec::new();
        let mut carry = 0;
        for (x, y) in a.bytes().rev().zip(b.bytes().rev()) {
            if x == b'.' {
                out.push(b'.');
                continue;
            }
            let d = (x - b'0') + (y - b'0') + carry;
            out.push(b'0' + d % 10);
            carry = d / 10;
        }
        if carry > 0 {
            out.push(b'1');
        }
        out.reverse();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn reads_decimals_as_str_parse_does() {
        // Texts that read, round at the edges, or fail (the last one is empty).
        let mut texts: Vec<String> = concat!(
            "0|-0|+0|0.0|.5|5.|1e0|1E5|1e+5|1e-5|-2.5e-7|0.1|1.5e300|1e308|",
            "1.7976931348623157e308|1.7976931348623159e308|1e309|2.2250738585072014e-308|",
            "2.2250738585072011e-308|4.9e-324|5e-324|2.4703282292062327e-324|",
            "2.4703282292062328e-324|1e-400|9007199254740993|9007199254740992.5|",
            "123456789012345678901234567890|0.30000000000000004|1e99999999999999999999|",
            "1e-99999999999999999999|0e99999|000123.4500|-|+|.|e5|1e|1e+|1.2.3|1e5.5|--1|",
            "+-1| 1|1 |inf|NaN|0x10|1_0|",
        )
        .split('|')
        .map(String::from)
        .collect();
        // Halfway cases beyond 800 digits: the digit that decides is far away.
        texts.push(format!("9007199254740993{}", "0".repeat(900)));
        texts.push(format!("9007199254740993.{}1", "0".repeat(900)));
        texts.push(format!("0.{}", "9".repeat(1000)));
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..50_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::from_bits(state);
            if x.is_finite() {
                texts.push(format!("{x}"));
                texts.push(format!("{x:e}"));
                texts.push(format!("{x:.3e}"));
                // Exactly between x and the next double up (a tie, to even), and just off it.
                let (x, next) = (x.abs(), f64::from_bits(x.abs().to_bits() + 1));
                if next.is_finite() && texts.len() % 8 < 2 {
                    let tie = exact_sum(x, (next - x) / 2.0);
                    texts.push(format!("{tie}1"));
                    texts.push(tie);
                }
            }
            texts.push(format!(
                "{}.{}e{}",
                state % 1000,
                state >> 40,
                (state % 700) as i64 - 350
            ));
        }
        for text in texts {
            let want = text.parse::<f64>().ok().filter(|x| !x.is_nan());
            let want = want.filter(|_| !text.to_ascii_lowercase().contains("inf"));
            assert_eq!(
                parse_f64(&text).map(f64::to_bits),
                want.map(f64::to_bits),
                "{text}"
            );
        }
    }

    #[test]
    fn as_display_writes_whole_numbers_without_fraction() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            9007199254740993.0,
            -1e20,
            999999999999999900000.0,
        ] {
            let mut s = String::new();
            write_whole_f64(&mut s, x).unwrap();
            assert_eq!(s, format!("{x:.0}"));
        }
    }
}
