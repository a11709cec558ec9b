//! "Did you mean …?": the nearest valid name to a misspelt one.
//!
//! A hint is only useful when it is probably right, so a candidate must be within a third of the
//! longer name's length in edit distance (a transposition counts once); otherwise we list what is
//! valid instead of guessing.

/// The candidate closest to `word`, if any is close enough to be a likely misspelling.
pub fn nearest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let lowered = word.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == word {
            continue;
        }
        let distance = strsim::damerau_levenshtein(&lowered, &candidate.to_lowercase());
        let allowed = (word.chars().count().max(candidate.chars().count()) / 3).max(1);
        // Keep the first of equally close candidates, so hints follow the caller's order.
        if distance <= allowed && best.is_none_or(|(best_distance, _)| distance < best_distance) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// A hint for a name that is not one of `candidates`: the nearest one, else the full list.
///
/// `noun` names what the candidates are, for the fallback ("valid keys: …").
pub fn hint(word: &str, candidates: &[&str], noun: &str) -> Option<String> {
    if let Some(near) = nearest(word, candidates.iter().copied()) {
        return Some(format!("did you mean `{near}`?"));
    }
    if candidates.is_empty() {
        return None;
    }
    Some(format!("{noun}: {}", quoted_list(candidates)))
}

/// `a`, `b`, `c` — names quoted for a message.
pub fn quoted_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_letter_is_found() {
        assert_eq!(nearest("need", ["uses", "needs", "with"]), Some("needs"));
    }

    #[test]
    fn a_transposition_counts_once() {
        assert_eq!(nearest("versoin", ["version", "name"]), Some("version"));
        assert_eq!(nearest("modles", ["models", "repos"]), Some("models"));
    }

    #[test]
    fn case_is_ignored() {
        assert_eq!(nearest("Steps", ["steps"]), Some("steps"));
    }

    #[test]
    fn the_closest_wins_and_ties_keep_the_callers_order() {
        assert_eq!(
            nearest("rank-comits", ["rank-commits", "rank"]),
            Some("rank-commits")
        );
        assert_eq!(nearest("a2", ["a1", "a3"]), Some("a1"));
    }

    #[test]
    fn far_names_are_not_guessed() {
        assert_eq!(nearest("bootstrap", ["uses", "needs", "with"]), None);
        assert_eq!(nearest("x", ["steps"]), None);
    }

    #[test]
    fn the_name_itself_is_not_a_suggestion() {
        assert_eq!(nearest("rank", ["rank"]), None);
    }

    #[test]
    fn the_hint_falls_back_to_the_list() {
        assert_eq!(
            hint("zzz", &["a", "b"], "known kinds").as_deref(),
            Some("known kinds: `a`, `b`")
        );
        assert_eq!(
            hint("neds", &["uses", "needs"], "valid keys").as_deref(),
            Some("did you mean `needs`?")
        );
        assert_eq!(hint("zzz", &[], "valid keys"), None);
    }
}
