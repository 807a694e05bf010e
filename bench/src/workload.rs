//! The bench's data: Argo-like profiles, gridded fields and tiny datasets,
//! generated from a seed so every run (and every implementation) writes the
//! same values.

/// Fill value of the three profile arrays.
pub const FILL: f32 = 99999.0;

/// The profile arrays, in the order they are defined, with their `units`.
pub const PROFILE_ARRAYS: [(&str, &str); 3] = [
    ("PRES", "decibar"),
    ("TEMP", "degree_Celsius"),
    ("PSAL", "psu"),
];

/// Units of `JULD`.
pub const JULD_UNITS: &str = "days since 1950-01-01 00:00:00 UTC";

/// Seed of every generator in the bench.
pub const SEED: u64 = 0x5eed_a71a_5000_0009;

/// One Argo-like profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Dataset name, `R<platform>_<cycle>`.
    pub name: String,
    /// `PRES`, `TEMP`, `PSAL`, each of [`levels`](Self::levels) values.
    pub arrays: [Vec<f32>; 3],
    /// Time of the profile (`JULD`, shape `[1]`).
    pub juld: f64,
    /// Dataset attribute `platform_number`.
    pub platform_number: String,
    /// Dataset attribute `cycle_number`.
    pub cycle_number: i32,
}

impl Profile {
    /// Number of levels of every profile array.
    pub fn levels(&self) -> usize {
        self.arrays[0].len()
    }
}

/// SplitMix64: small, fast, and good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for stream `stream` of `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut r = Self(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[-0.5, 0.5)`.
    pub fn noise(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// Levels of profile `i`: 20 to 119.
pub fn levels(i: usize) -> usize {
    20 + (i.wrapping_mul(7919) % 100)
}

/// Profile `i` of the collection: a pure function of `i` and [`SEED`], so
/// datasets written from several tasks hold the same values.
pub fn profile(i: usize) -> Profile {
    let mut rng = Rng::new(SEED, i as u64);
    let n = levels(i);
    let platform = 6_900_000 + i / 150;
    let cycle = (i % 150) as i32 + 1;
    let surface = 5.0 + 20.0 * ((i % 360) as f32).to_radians().sin().abs();
    let mut pres = Vec::with_capacity(n);
    let mut temp = Vec::with_capacity(n);
    let mut psal = Vec::with_capacity(n);
    for k in 0..n {
        let k = k as f32;
        pres.push(5.0 + 10.0 * k + rng.noise());
        temp.push(surface - 0.15 * k + 0.05 * rng.noise());
        psal.push(34.5 + 0.01 * k + 0.01 * rng.noise());
    }
    // Every tenth profile lost its deepest temperature: the fill counts in the statistics.
    if i.is_multiple_of(10)
        && let Some(last) = temp.last_mut()
    {
        *last = FILL;
    }
    Profile {
        name: format!("R{platform}_{cycle:03}"),
        arrays: [pres, temp, psal],
        juld: 25_000.0 + i as f64 * 0.25,
        platform_number: platform.to_string(),
        cycle_number: cycle,
    }
}

/// Name of tiny dataset `i`.
pub fn tiny_name(i: usize) -> String {
    format!("t{i:06}")
}

/// The one value of tiny dataset `i`.
pub fn tiny_value(i: usize) -> u8 {
    (i.wrapping_mul(31) % 251) as u8
}

/// Side of a grid dataset: each holds one `GRID` × `GRID` `f32` field.
pub const GRID: usize = 512;

/// Side of a grid's chunks (the grid is chunked `GRID_CHUNK` × `GRID_CHUNK`).
pub const GRID_CHUNK: usize = 256;

/// Name of the one array of a grid dataset.
pub const GRID_ARRAY: &str = "sst";

/// Name of grid dataset `i`.
pub fn grid_name(i: usize) -> String {
    format!("sst_{i:05}")
}

/// The field of grid dataset `i`, row-major: a smooth surface plus noise
/// rounded to 0.01, so it compresses like real data rather than like zeros.
/// The trigonometry is per row and per column, so generating a grid costs
/// little next to compressing it.
pub fn grid(i: usize) -> Vec<f32> {
    let mut rng = Rng::new(SEED, (1 << 40) | i as u64);
    let phase = i as f32 * 0.05;
    let rows: Vec<f32> = (0..GRID)
        .map(|y| 15.0 + 10.0 * ((y as f32) / 80.0 + phase).sin())
        .collect();
    let cols: Vec<f32> = (0..GRID).map(|x| 3.0 * ((x as f32) / 45.0).cos()).collect();
    let mut field = Vec::with_capacity(GRID * GRID);
    for row in &rows {
        for col in &cols {
            let v = row + col + 0.05 * rng.noise();
            field.push((v * 100.0).round() / 100.0);
        }
    }
    field
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_the_same_whichever_order_it_is_generated_in() {
        let later = profile(1234);
        let _ = profile(7);
        assert_eq!(profile(1234), later);
        assert_ne!(profile(1234).arrays, profile(1235).arrays);
    }

    #[test]
    fn profiles_have_between_20_and_119_levels_and_unique_names() {
        let names: std::collections::HashSet<String> = (0..3000).map(|i| profile(i).name).collect();
        assert_eq!(names.len(), 3000);
        assert!((0..3000).all(|i| (20..120).contains(&profile(i).levels())));
    }

    #[test]
    fn a_grid_fills_its_square_and_differs_from_the_next_one() {
        let g = grid(3);
        assert_eq!(g.len(), GRID * GRID);
        assert_eq!(grid(3), g);
        assert_ne!(grid(4), g);
        assert!(g.iter().all(|v| v.is_finite() && *v != FILL));
    }
}
