//! A double as decimal text, exactly as Rust's `{}` writes it (the shortest digits that read
//! back as the same double, never an exponent), without `core::fmt`'s float formatting:
//! the messages that quote a number (`got the number 1.5`) are the only floats a
//! WebAssembly module formats, and `core`'s Grisu and Dragon tables weigh ~20 kB there.
//!
//! The digits come from the exact bignum method `core` falls back to (Steele & White's
//! Dragon4 in its free-format mode): the same digits, rounded the same way.

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
