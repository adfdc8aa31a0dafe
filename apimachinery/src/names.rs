//! Generated object names (`metadata.generateName`), as the apiserver's `SimpleNameGenerator`
//! makes them.

use rand::Rng;

/// Characters suffixes are drawn from: no vowels, so no words, as upstream.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of the random suffix.
const SUFFIX_LENGTH: usize = 5;
/// Longest name a generated one may be (a DNS label).
const MAX_NAME_LENGTH: usize = 63;

/// `prefix` plus a random 5-character suffix; a long prefix is cut so the name fits 63
/// characters.
pub fn generate_name(prefix: &str) -> String {
    let mut rng = rand::rng();
    let mut name: String = prefix.chars().take(MAX_NAME_LENGTH - SUFFIX_LENGTH).collect();
    name.extend((0..SUFFIX_LENGTH).map(|_| char::from(SUFFIX_ALPHABET[rng.random_range(0..SUFFIX_ALPHABET.len())])));
    name
}

/// A suffix like [`generate_name`]'s drawn from `seed` instead of at random: the same seed gives
/// the same five characters on every run and platform.
pub fn stable_suffix(seed: &str) -> String {
    let n = SUFFIX_ALPHABET.len() as u64;
    let mut hash = fnv1a(seed);
    (0..SUFFIX_LENGTH)
        .map(|_| {
            let c = char::from(SUFFIX_ALPHABET[(hash % n) as usize]);
            hash /= n;
            c
        })
        .collect()
}

/// A small stable hash (64-bit FNV-1a), for identifiers that must not change between runs, as
/// the standard library's hasher may.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_suffixes_depend_on_the_seed_only() {
        let a = stable_suffix("kproof-rc-1-x7k2p");
        assert_eq!(a, stable_suffix("kproof-rc-1-x7k2p"));
        assert_ne!(a, stable_suffix("kproof-rc-1-x7k2q"));
        assert_eq!(a.len(), SUFFIX_LENGTH);
        assert!(a.bytes().all(|b| SUFFIX_ALPHABET.contains(&b)), "{a}");
    }

    #[test]
    fn names_keep_the_prefix_and_fit_a_label() {
        let name = generate_name("web-");
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..].bytes().all(|b| SUFFIX_ALPHABET.contains(&b)), "{name}");
        let long = generate_name(&"x".repeat(100));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with(&"x".repeat(58)));
    }
}
