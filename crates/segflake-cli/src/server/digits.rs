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

#[cfg(test)]
mod tests {
    use super::Digits;

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
}
