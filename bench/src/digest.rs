//! A digest of everything a collection holds, so two implementations can
//! prove they read the same values (and the values the generator made).

use crate::workload::Profile;

/// FNV-1a over the values of a collection, in dataset order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    hash: u64,
    /// Datasets folded in.
    pub datasets: usize,
}

impl Default for Digest {
    fn default() -> Self {
        Self {
            hash: 0xcbf2_9ce4_8422_2325,
            datasets: 0,
        }
    }
}

impl Digest {
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.hash ^= u64::from(*b);
            self.hash = self.hash.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Folds in one profile as read back.
    pub fn add_profile(
        &mut self,
        name: &str,
        arrays: [&[f32]; 3],
        juld: f64,
        platform_number: &str,
        cycle_number: i32,
    ) {
        self.bytes(name.as_bytes());
        self.bytes(&[0]);
        for a in arrays {
            self.bytes(&(a.len() as u64).to_le_bytes());
            for v in a {
                self.bytes(&v.to_bits().to_le_bytes());
            }
        }
        self.bytes(&juld.to_bits().to_le_bytes());
        self.bytes(platform_number.as_bytes());
        self.bytes(&[0]);
        self.bytes(&cycle_number.to_le_bytes());
        self.datasets += 1;
    }

    /// Folds in a generated profile.
    pub fn add(&mut self, p: &Profile) {
        self.add_profile(
            &p.name,
            [&p.arrays[0], &p.arrays[1], &p.arrays[2]],
            p.juld,
            &p.platform_number,
            p.cycle_number,
        );
    }

    /// The digest of the first `n` generated profiles.
    pub fn expected(n: usize) -> Self {
        let mut d = Self::default();
        for i in 0..n {
            d.add(&crate::workload::profile(i));
        }
        d
    }
}
