//! Generated names (`utils.GenerateRayClusterName`: `<rayservice>-<5 random characters>`), from
//! a seeded generator so a run in virtual time names its clusters the same way every time.

/// `k8s.io/apimachinery/pkg/util/rand`'s alphabet: no vowels (no words) and no confusable digits.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A deterministic source of random name suffixes (SplitMix64).
#[derive(Debug, Clone)]
pub struct NameGenerator {
    state: u64,
}

impl NameGenerator {
    /// A generator whose sequence is fixed by `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `n` characters of the alphabet `rand.String` uses.
    pub fn suffix(&mut self, n: usize) -> String {
        (0..n).map(|_| ALPHANUMS[(self.next() % ALPHANUMS.len() as u64) as usize] as char).collect()
    }

    /// `<service>-<5 characters>`: the name of a RayCluster a RayService makes (KubeRay v1.4+).
    pub fn ray_cluster_name(&mut self, service: &str) -> String {
        format!("{service}-{}", self.suffix(5))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_five_characters_of_the_alphabet_and_repeat_per_seed() {
        let mut a = NameGenerator::seeded(7);
        let mut b = NameGenerator::seeded(7);
        let name = a.ray_cluster_name("svc");
        assert_eq!(name, b.ray_cluster_name("svc"));
        let suffix = name.strip_prefix("svc-").unwrap();
        assert_eq!(suffix.len(), 5);
        assert!(suffix.bytes().all(|c| ALPHANUMS.contains(&c)));
        assert_ne!(a.ray_cluster_name("svc"), name);
    }
}
