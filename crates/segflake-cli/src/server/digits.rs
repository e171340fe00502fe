//! The decimal form of a `u64` in a stack buffer: the bytes `u64::to_string` makes, without
//! the formatting machinery or an allocation (an ID is the body of most responses).

/// `"00" "01" … "99"`: two digits per division by 100.
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// A `u64` in decimal: 1 to 20 ASCII digits, no sign, no leading zeros.
#[derive(Clone, Copy)]
pub struct Digits {
    buf: [u8; 20],
    start: u8,
}

impl Digits {
    pub fn new(mut n: u64) -> Digits {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        let mut pair = |i: usize, d: u64| {
            let d = d as usize * 2;
            buf[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
        };
        while n >= 10_000 {
            let r = n % 10_000;
            n /= 10_000;
            i -= 4;
            pair(i, r / 100);
            pair(i + 2, r % 100);
        }
        if n >= 100 {
            i -= 2;
            pair(i, n % 100);
            n /= 100;
        }
        if n >= 10 {
            i -= 2;
            pair(i, n);
        } else {
            i -= 1;
            buf[i] = b'0' + n as u8;
        }
        Digits {
            buf,
            start: i as u8,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[usize::from(self.start)..]
    }
}

/// `"N",` for a run of integers (a JSON list's string items, the comma after each), one
/// buffer moved to the next integer by a carry through its last digits instead of the
/// divisions of [`Digits::new`]: a batch of IDs is mostly runs of consecutive integers.
pub struct QuotedRun {
    /// `"`, the digits, `"` and `,` from index 0; the rest is not written out.
    buf: [u8; 24],
    /// The index of the last digit.
    last: u8,
    /// The integer `buf` holds.
    value: u64,
}

impl QuotedRun {
    pub fn new(n: u64) -> QuotedRun {
        let digits = Digits::new(n);
        let text = digits.as_bytes();
        let mut buf = [0u8; 24];
        buf[0] = b'"';
        buf[1..=text.len()].copy_from_slice(text);
        buf[text.len() + 1..text.len() + 3].copy_from_slice(b"\",");
        QuotedRun {
            buf,
            last: text.len() as u8,
            value: n,
        }
    }

    /// `"n",`: the run's next integer by a carry when `n` follows the last one, else
    /// anew.
    #[inline]
    pub fn write(&mut self, n: u64, out: &mut Vec<u8>) {
        let last = usize::from(self.last);
        // Nine in ten of a run: the last digit goes up by one (u64::MAX ends in 5 and has
        // no next, so `n` is checked as the sum, not compared with a wrapped one).
        if self.buf[last] < b'9' && self.value.checked_add(1) == Some(n) {
            self.buf[last] += 1;
            self.value = n;
        } else {
            self.step_to(n);
        }
        // The whole buffer (a copy of fixed size, no call) and the unused end cut off.
        out.extend_from_slice(&self.buf);
        out.truncate(out.len() - (self.buf.len() - usize::from(self.last) - 3));
    }

    #[cold]
    fn step_to(&mut self, n: u64) {
        if self.value.checked_add(1) == Some(n) {
            self.value = n;
            let mut i = usize::from(self.last);
            while i > 0 {
                if self.buf[i] < b'9' {
                    self.buf[i] += 1;
                    return;
                }
                self.buf[i] = b'0';
                i -= 1;
            }
        }
        // Not the next integer, or all nines (one digit more).
        if self.value != n || self.buf[1] == b'0' {
            *self = QuotedRun::new(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Digits, QuotedRun};

    #[test]
    fn digits_are_to_string() {
        let mut n = 1u64;
        let mut values = vec![0, 9, 10, 99, 100, 101, u64::MAX, u64::MAX - 1, 1 << 63];
        while let Some(m) = n.checked_mul(10) {
            values.extend([n - 1, n, n + 1]);
            n = m;
        }
        for v in values {
            assert_eq!(Digits::new(v).as_bytes(), v.to_string().as_bytes(), "{v}");
        }
    }

    #[test]
    fn a_quoted_run_writes_each_integer_as_to_string() {
        let mut values: Vec<u64> = (9_990..10_012).chain(99_999..100_001).collect();
        values.extend([5, 5, 4, 0, 1, 9, 10]);
        values.extend(u64::MAX - 2..=u64::MAX);
        values.extend([0, 1, 999_999_999_999_999_998]);
        values.extend(999_999_999_999_999_999..=1_000_000_000_000_000_020);
        values.extend([
            u64::MAX,
            9_999_999_999_999_999_999,
            10_000_000_000_000_000_000,
        ]);
        let mut run = QuotedRun::new(values[0]);
        let mut out = Vec::new();
        for &v in &values {
            out.clear();
            run.write(v, &mut out);
            assert_eq!(out, format!("\"{v}\",").into_bytes(), "{v}");
        }
    }
}
