//! Key names for `holdfast send`, as tmux's `send-keys` takes them.
//!
//! `C-c`, `M-x`, `Enter`, `Escape`, `Up`, `F1`, `PageDown`: each word that
//! names a key is the bytes a terminal sends for it (cursor and function
//! keys in the terminal's normal mode, as xterm sends them); a word that
//! names none is sent as its text, as tmux does.

/// The bytes of the key `name`, if it names one.
pub fn bytes_of(name: &str) -> Option<Vec<u8>> {
    if let Some(key) = name.strip_prefix("M-") {
        // Meta: ESC, then the key.
        let mut bytes = vec![0x1b];
        bytes.extend(bytes_of(key).unwrap_or_else(|| key.as_bytes().to_vec()));
        return (!key.is_empty()).then_some(bytes);
    }
    if let Some(key) = name.strip_prefix("C-").or_else(|| name.strip_prefix('^')) {
        return control(key).map(|byte| vec![byte]);
    }
    let named: &[u8] = match name {
        "Enter" => b"\r",
        "Tab" => b"\t",
        "BTab" => b"\x1b[Z",
        "Escape" => b"\x1b",
        "Space" => b" ",
        "BSpace" => b"\x7f",
        "Up" => b"\x1b[A",
        "Down" => b"\x1b[B",
        "Right" => b"\x1b[C",
        "Left" => b"\x1b[D",
        "Home" => b"\x1b[H",
        "End" => b"\x1b[F",
        "PageUp" | "PPage" | "PgUp" => b"\x1b[5~",
        "PageDown" | "NPage" | "PgDn" => b"\x1b[6~",
        "Insert" | "IC" => b"\x1b[2~",
        "Delete" | "DC" => b"\x1b[3~",
        "F1" => b"\x1bOP",
        "F2" => b"\x1bOQ",
        "F3" => b"\x1bOR",
        "F4" => b"\x1bOS",
        "F5" => b"\x1b[15~",
        "F6" => b"\x1b[17~",
        "F7" => b"\x1b[18~",
        "F8" => b"\x1b[19~",
        "F9" => b"\x1b[20~",
        "F10" => b"\x1b[21~",
        "F11" => b"\x1b[23~",
        "F12" => b"\x1b[24~",
        _ => return None,
    };
    Some(named.to_vec())
}

/// The control character of `key` (`c` in `C-c`), if it has one.
fn control(key: &str) -> Option<u8> {
    let mut chars = key.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return (key == "Space").then_some(0);
    };
    match c.to_ascii_lowercase() {
        c @ 'a'..='z' => Some(c as u8 - b'a' + 1),
        '@' | ' ' | '2' => Some(0),
        '[' | '3' => Some(0x1b),
        '\\' | '4' => Some(0x1c),
        ']' | '5' => Some(0x1d),
        '^' | '6' => Some(0x1e),
        '_' | '/' | '7' => Some(0x1f),
        '?' | '8' => Some(0x7f),
        _ => None,
    }
}

/// What `words` send: each the bytes of the key it names, or its text;
/// all text with `literal`.
pub fn to_send(words: &[String], literal: bool) -> Vec<u8> {
    words
        .iter()
        .flat_map(|word| match literal {
            true => word.as_bytes().to_vec(),
            false => bytes_of(word).unwrap_or_else(|| word.as_bytes().to_vec()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn key_names_are_the_bytes_a_terminal_sends() {
        assert_eq!(bytes_of("C-c"), Some(vec![3]));
        assert_eq!(bytes_of("C-C"), Some(vec![3]));
        assert_eq!(bytes_of("^D"), Some(vec![4]));
        assert_eq!(bytes_of("C-]"), Some(vec![0x1d]));
        assert_eq!(bytes_of("C-Space"), Some(vec![0]));
        assert_eq!(bytes_of("M-x"), Some(b"\x1bx".to_vec()));
        assert_eq!(bytes_of("M-Enter"), Some(b"\x1b\r".to_vec()));
        assert_eq!(bytes_of("Up"), Some(b"\x1b[A".to_vec()));
        assert_eq!(bytes_of("F5"), Some(b"\x1b[15~".to_vec()));
        assert_eq!(bytes_of("C-"), None);
        assert_eq!(bytes_of("C-ab"), None);
        assert_eq!(bytes_of("enter"), None, "names are as tmux spells them");
    }

    #[test]
    fn words_that_name_no_key_are_their_text() {
        assert_eq!(
            to_send(&words(&["make test", "Enter"]), false),
            b"make test\r"
        );
        assert_eq!(to_send(&words(&["C-c"]), true), b"C-c");
        assert_eq!(to_send(&words(&["echo hi\n"]), false), b"echo hi\n");
    }
}
