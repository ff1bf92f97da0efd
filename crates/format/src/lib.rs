//! The JSON files that one tdmap command writes and another reads (a mapping, a model,
//! an analyze report, a sim report) each start with `"format"` and `"version"` fields.
//! This crate holds what they share: the [`Versioned`] trait that names a type's format,
//! version and writer, the reader that checks the header before anything else, and
//! [`FormatError`], whose message is one line naming the file, what was wrong and the
//! command that writes a good file. The types themselves live in the libraries that own
//! their data (`tdmap-map`, `tdmap-sharing`, `tdmap-sim`); `docs/formats.md` lists them.
//!
//! The rule on versions: adding an optional field keeps the version; removing a field or
//! changing what one means bumps it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod fnv;
mod ranges;
pub use fnv::Fnv;
pub use ranges::range_list;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A JSON file type with a format name and a version.
pub trait Versioned: Serialize + DeserializeOwned {
    /// The `"format"` field, e.g. `tdmap-mapping`.
    const FORMAT: &'static str;
    /// The `"version"` field this build writes and reads.
    const VERSION: u32;
    /// The oldest version this build still reads (its fields must deserialise into
    /// `Self`, the newer ones optional): by default only [`Versioned::VERSION`].
    const OLDEST: u32 = Self::VERSION;
    /// The command that writes this format, for the fix in error messages.
    const WRITER: &'static str;

    /// Checks what the types cannot say (e.g. a square matrix); `Err` is the reason, which
    /// [`read`] reports as [`FormatError::Invalid`].
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Why a versioned JSON file could not be read. Every message is one line that names the
/// file and says which command writes a good one.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file could not be read.
    #[error("cannot read {}: {err}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
    /// The file is not JSON, or not a JSON object.
    #[error("{}: not a JSON object ({why}); write it with {writer}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        why: String,
        /// The command that writes the expected format.
        writer: &'static str,
    },
    /// The file is another format, or another version of this one.
    #[error("{}: {found}, expected \"{format}\" version {version}; write it with {writer}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// What its header says, e.g. `format "tdmap-model" version 1` or `no "format" field`.
        found: String,
        /// The format expected.
        format: &'static str,
        /// The version expected.
        version: u32,
        /// The command that writes the expected format.
        writer: &'static str,
    },
    /// A field is missing or has the wrong type.
    #[error("{}: field \"{field}\": {why}; write it with {writer}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field, e.g. `mapping` (or `?` when the parser does not say).
        field: String,
        /// What is wrong with it.
        why: String,
        /// The command that writes the expected format.
        writer: &'static str,
    },
    /// Every field is there but the content breaks the format's rules.
    #[error("{}: {why}; write it with {writer}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The broken rule.
        why: String,
        /// The command that writes the expected format.
        writer: &'static str,
    },
}

impl FormatError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FormatError::Read { path, .. }
            | FormatError::Json { path, .. }
            | FormatError::Header { path, .. }
            | FormatError::Field { path, .. }
            | FormatError::Invalid { path, .. } => path,
        }
    }
}

/// The header of any tdmap JSON file; the other fields are skipped.
#[derive(Deserialize)]
struct Probe {
    format: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

/// Reads a `T` from `path`: the header first, then the fields, then [`Versioned::check`].
pub fn read<T: Versioned>(path: &Path) -> Result<T, FormatError> {
    let text = std::fs::read_to_string(path).map_err(|err| FormatError::Read {
        path: path.to_path_buf(),
        err,
    })?;
    from_str(&text, path)
}

/// Parses a `T` from `text`, which came from `path` (named in errors only).
pub fn from_str<T: Versioned>(text: &str, path: &Path) -> Result<T, FormatError> {
    let path = path.to_path_buf();
    let writer = T::WRITER;
    let probe: Probe = serde_json::from_str(text).map_err(|e| FormatError::Json {
        path: path.clone(),
        why: escaped(&e.to_string()),
        writer,
    })?;
    let found = match (&probe.format, &probe.version) {
        (None, _) => Some("no \"format\" field".to_string()),
        (Some(f), v) => {
            let readable = u64::from(T::OLDEST)..=u64::from(T::VERSION);
            let ok = f.as_str() == Some(T::FORMAT)
                && v.as_ref()
                    .and_then(|v| v.as_u64())
                    .is_some_and(|v| readable.contains(&v));
            let v = v
                .as_ref()
                .map_or("no version".to_string(), |v| format!("version {v}"));
            (!ok).then(|| format!("format {f} {v}"))
        }
    };
    if let Some(found) = found {
        return Err(FormatError::Header {
            path,
            found,
            format: T::FORMAT,
            version: T::VERSION,
            writer,
        });
    }
    let value: T = serde_json::from_str(text).map_err(|e| field_error(&path, text, e, writer))?;
    value
        .check()
        .map_err(|why| FormatError::Invalid { path, why, writer })?;
    Ok(value)
}

/// `value` as pretty JSON, the header first (as the type declares it).
pub fn to_string<T: Versioned>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("tdmap's formats serialise to JSON")
}

/// serde_json says "missing field `x` at line 1 column 9", or "invalid type: ... at line
/// 3 column 12" without the field: then the field is the last key before that point.
fn field_error(path: &Path, text: &str, e: serde_json::Error, writer: &'static str) -> FormatError {
    let msg = escaped(&e.to_string());
    let why = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    let (field, why) = match why.strip_prefix("missing field `") {
        Some(rest) => (
            rest.trim_end_matches('`').to_string(),
            "missing".to_string(),
        ),
        None => (
            key_before(text, e.line(), e.column())
                .unwrap_or("?")
                .to_string(),
            why,
        ),
    };
    FormatError::Field {
        path: path.to_path_buf(),
        field,
        why,
        writer,
    }
}

/// `msg` with control characters escaped: serde quotes a bad value as it was decoded,
/// and a `"\n"` in it would break the one-line message.
fn escaped(msg: &str) -> String {
    msg.chars()
        .flat_map(|c| {
            let esc = c.is_control().then(|| c.escape_default());
            esc.into_iter()
                .flatten()
                .chain((!c.is_control()).then_some(c))
        })
        .collect()
}

/// The last object key that starts before line `line`, column `column` (1-based).
fn key_before(text: &str, line: usize, column: usize) -> Option<&str> {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let end = (start + column).min(text.len());
    let head = text.get(..end)?;
    let colon = head.rfind("\":")?;
    let open = head[..colon].rfind('"')?;
    // A key holds no raw control character: this is a value that starts with ':'.
    let key = &head[open + 1..colon];
    (!key.contains(char::is_control)).then_some(key)
}

/// The `"format"` and `"version"` values of `T`, for building one: `let (format, version)
/// = header::<T>();`.
pub fn header<T: Versioned>() -> (String, u32) {
    (T::FORMAT.to_string(), T::VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Demo {
        format: String,
        version: u32,
        threads: usize,
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        kind: Option<Kind>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Kind {
        Amount,
    }

    impl Versioned for Demo {
        const FORMAT: &'static str = "tdmap-demo";
        const VERSION: u32 = 3;
        const WRITER: &'static str = "tdmap demo --json";
        fn check(&self) -> Result<(), String> {
            (self.threads > 0).then_some(()).ok_or("no threads".into())
        }
    }

    fn demo(threads: usize) -> Demo {
        let (format, version) = header::<Demo>();
        Demo {
            format,
            version,
            threads,
            note: None,
            kind: None,
        }
    }

    fn parse(text: &str) -> Result<Demo, FormatError> {
        from_str(text, Path::new("d.json"))
    }

    #[test]
    fn a_file_round_trips_header_first() {
        let text = to_string(&demo(4));
        assert!(
            text.starts_with("{\n  \"format\": \"tdmap-demo\",\n  \"version\": 3,"),
            "{text}"
        );
        assert_eq!(parse(&text).unwrap(), demo(4));
    }

    #[test]
    fn another_format_or_version_names_both_and_the_writer() {
        let other = r#"{"format": "tdmap-model", "version": 1, "threads": 2}"#;
        assert_eq!(
            parse(other).unwrap_err().to_string(),
            "d.json: format \"tdmap-model\" version 1, expected \"tdmap-demo\" version 3; write it with tdmap demo --json"
        );
        let newer = r#"{"format": "tdmap-demo", "version": 99, "threads": 2}"#;
        assert!(parse(newer)
            .unwrap_err()
            .to_string()
            .starts_with("d.json: format \"tdmap-demo\" version 99, expected"));
        let bare = r#"{"threads": 2}"#;
        assert!(parse(bare)
            .unwrap_err()
            .to_string()
            .starts_with("d.json: no \"format\" field, expected"));
        let legacy = r#"{"format": "tdmap-model-v1"}"#;
        assert!(parse(legacy)
            .unwrap_err()
            .to_string()
            .contains("\"tdmap-model-v1\" no version"));
    }

    /// Found by `make fuzz`: serde quotes an unknown variant as decoded, so
    /// `"kind": "Amount\n"` gave a message on two lines.
    #[test]
    fn a_bad_value_with_a_newline_is_named_on_one_line() {
        let text = r#"{"format": "tdmap-demo", "version": 3, "threads": 1, "kind": "Amount\n"}"#;
        let err = parse(text).unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("unknown variant `Amount\\n`"), "{err}");
    }

    /// Found by `make fuzz`: a string value that starts with ':' on the line after its
    /// key looked like the end of a key, and the "field" named spanned two lines.
    #[test]
    fn a_value_that_starts_with_a_colon_is_not_taken_for_a_key() {
        let text = "{\"format\": \"tdmap-demo\", \"version\": 3, \"threads\":\n\": two\"}";
        let err = parse(text).unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(
            err.starts_with("d.json: field \"?\": invalid type"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_or_mistyped_field_is_named() {
        let missing = r#"{"format": "tdmap-demo", "version": 3}"#;
        assert_eq!(
            parse(missing).unwrap_err().to_string(),
            "d.json: field \"threads\": missing; write it with tdmap demo --json"
        );
        let mistyped = "{\"format\": \"tdmap-demo\",\n \"version\": 3,\n \"threads\": \"two\"}";
        let err = parse(mistyped).unwrap_err().to_string();
        assert!(
            err.starts_with("d.json: field \"threads\": invalid type: string"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }

    #[test]
    fn not_json_and_broken_rules_say_so() {
        assert!(parse("nope")
            .unwrap_err()
            .to_string()
            .starts_with("d.json: not a JSON object ("));
        let empty = r#"{"format": "tdmap-demo", "version": 3, "threads": 0}"#;
        assert_eq!(
            parse(empty).unwrap_err().to_string(),
            "d.json: no threads; write it with tdmap demo --json"
        );
        let err = read::<Demo>(Path::new("/nonexistent/d.json")).unwrap_err();
        assert!(matches!(err, FormatError::Read { .. }), "{err}");
        assert_eq!(err.path(), Path::new("/nonexistent/d.json"));
    }

    #[test]
    fn an_added_optional_field_keeps_old_files_readable() {
        let old = r#"{"format": "tdmap-demo", "version": 3, "threads": 1}"#;
        assert_eq!(parse(old).unwrap(), demo(1));
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Bumped {
        format: String,
        version: u32,
    }

    impl Versioned for Bumped {
        const FORMAT: &'static str = "tdmap-demo";
        const VERSION: u32 = 3;
        const OLDEST: u32 = 2;
        const WRITER: &'static str = "tdmap demo --json";
    }

    #[test]
    fn versions_from_oldest_to_current_are_read_and_others_refused() {
        let at = |v: u32| format!(r#"{{"format": "tdmap-demo", "version": {v}}}"#);
        let read = |v: u32| from_str::<Bumped>(&at(v), Path::new("b.json"));
        assert_eq!(read(2).unwrap().version, 2);
        assert_eq!(read(3).unwrap().version, 3);
        for v in [1, 4] {
            let err = read(v).unwrap_err().to_string();
            assert!(err.contains(&format!("version {v}, expected")), "{err}");
        }
        // Without OLDEST, only VERSION.
        assert!(parse(&at(2).replace("}", ", \"threads\": 1}")).is_err());
    }
}
