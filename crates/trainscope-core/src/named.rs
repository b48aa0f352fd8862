//! Settings chosen by name: one lookup and one "unknown name" message for
//! every enum that a flag, a page field or a JSON string names by a stable
//! word (the software stack, CUDA graph scope, token dispatcher, attention
//! kernel). The CLI, the page and the validation tests read names through
//! [`Named::parse`], so they accept the same spellings and say the same
//! thing about a name that is none of them.

use crate::diag::unknown_name;

/// A setting with a stable name per choice.
pub trait Named: Sized + Copy + 'static {
    /// What messages call the setting ("stack", "token dispatcher").
    const KIND: &'static str;
    /// Every choice, the default first (the order messages list them in).
    const CHOICES: &'static [Self];
    /// Other spellings a choice is read from (matched like the names).
    const ALIASES: &'static [(&'static str, Self)] = &[];

    /// The stable name (CLI, JSON, the page).
    fn name(self) -> &'static str;

    /// The choice named `name`: its stable name or an alias, trimmed and
    /// case-insensitive.
    fn from_name(name: &str) -> Option<Self> {
        let n = name.trim();
        Self::CHOICES
            .iter()
            .copied()
            .find(|c| c.name().eq_ignore_ascii_case(n))
            .or_else(|| {
                Self::ALIASES
                    .iter()
                    .find(|(a, _)| a.eq_ignore_ascii_case(n))
                    .map(|(_, c)| *c)
            })
    }

    /// [`Named::from_name`], or the message naming every choice.
    fn parse(name: &str) -> Result<Self, String> {
        Self::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Self::CHOICES.iter().map(|c| c.name()).collect();
            unknown_name(Self::KIND, name, &names)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Named;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Colour {
        Red,
        Blue,
    }

    impl Named for Colour {
        const KIND: &'static str = "colour";
        const CHOICES: &'static [Colour] = &[Colour::Red, Colour::Blue];
        const ALIASES: &'static [(&'static str, Colour)] = &[("azure", Colour::Blue)];
        fn name(self) -> &'static str {
            match self {
                Colour::Red => "red",
                Colour::Blue => "blue",
            }
        }
    }

    #[test]
    fn names_and_aliases_read_trimmed_in_any_case_and_the_rest_is_named() {
        assert_eq!(Colour::from_name(" RED "), Some(Colour::Red));
        assert_eq!(Colour::parse("Azure"), Ok(Colour::Blue));
        assert_eq!(
            Colour::parse("green").unwrap_err(),
            "unknown colour `green`; expected one of: red, blue"
        );
    }
}
