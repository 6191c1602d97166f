//! SplitMix64: a few lines, reproducible from the seed on every platform.

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator for run `run` of seed `seed`.
    pub fn for_run(seed: u64, run: u64) -> Rng {
        let mut rng = Rng(seed ^ run.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next();
        rng
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}
