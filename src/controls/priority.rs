//! Seeded, per-item random priorities: the one source of randomness of every control.
//!
//! A control that draws claims (a sample, a shuffle) orders them by `blake3(seed, purpose, id)`
//! rather than by shuffling a list, so an item's draw depends on its own id and the seed alone:
//! adding claims to the population leaves every other claim's priority unchanged, and a larger
//! sample drawn with the same seed contains the smaller one (only the new claims need judging).

/// The priority of `id` under `seed` for `purpose` (a short tag keeping the streams of two
/// controls apart): the first eight bytes of the blake3 digest, as a number.
pub fn priority(seed: u64, purpose: &str, id: &str) -> u64 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"claimflow-control-priority-v1\0");
    hasher.update(&seed.to_le_bytes());
    hasher.update(purpose.as_bytes());
    hasher.update(b"\0");
    hasher.update(id.as_bytes());
    let bytes = hasher.finalize();
    u64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("eight bytes"))
}

/// `items` sorted by their priority under `seed` and `purpose` (ties, vanishingly rare, by id).
pub fn seeded_order<T>(
    items: impl IntoIterator<Item = T>,
    seed: u64,
    purpose: &str,
    id: impl Fn(&T) -> String,
) -> Vec<T> {
    let mut keyed: Vec<(u64, String, T)> = items
        .into_iter()
        .map(|item| {
            let name = id(&item);
            (priority(seed, purpose, &name), name, item)
        })
        .collect();
    keyed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    keyed.into_iter().map(|(_, _, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priority_depends_on_seed_purpose_and_id_only() {
        assert_eq!(priority(1, "sample", "a"), priority(1, "sample", "a"));
        assert_ne!(priority(1, "sample", "a"), priority(2, "sample", "a"));
        assert_ne!(priority(1, "sample", "a"), priority(1, "shuffle", "a"));
        assert_ne!(priority(1, "sample", "a"), priority(1, "sample", "b"));
    }

    #[test]
    fn adding_items_keeps_the_relative_order_of_the_others() {
        let small: Vec<&str> = seeded_order(["a", "b", "c", "d"], 7, "t", |x| x.to_string());
        let large: Vec<&str> =
            seeded_order(["a", "b", "c", "d", "e", "f"], 7, "t", |x| x.to_string());
        let kept: Vec<&str> = large.into_iter().filter(|x| small.contains(x)).collect();
        assert_eq!(kept, small);
    }
}
