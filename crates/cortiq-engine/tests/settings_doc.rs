//! `docs/settings.md` lists every environment setting: each `CMF_*` / `CORTIQ_*` name the
//! workspace's Rust sources spell as a string literal is in it, and each name it lists occurs
//! in those sources (literal or comment), so the page can neither miss a knob nor keep a
//! removed one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Setting names (`CMF_` or `CORTIQ_` then capitals, digits, underscores) in `text`; with
/// `quoted`, only those written as a whole string literal (`"CMF_GPU"`). A name ending in `_`
/// is a prefix that code completes (`format!`), not a setting.
fn names(text: &str, quoted: bool) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let starts = (rest.starts_with(b"CMF_") || rest.starts_with(b"CORTIQ_")) && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if !starts {
            i += 1;
            continue;
        }
        let len = rest.iter().take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_').count();
        // ASCII bytes only, so a str slice on char boundaries.
        let name = &text[i..i + len];
        let in_quotes = i > 0 && bytes[i - 1] == b'"' && bytes.get(i + len) == Some(&b'"');
        if !name.ends_with('_') && (!quoted || in_quotes) {
            found.insert(name.to_string());
        }
        i += len;
    }
    found
}

#[test]
fn the_settings_page_lists_every_setting_the_code_reads_and_no_other() {
    let root = workspace();
    let page = std::fs::read_to_string(root.join("docs/settings.md")).expect("docs/settings.md");
    let documented = names(&page, false);
    let mut files = Vec::new();
    sources(&root.join("crates"), &mut files);
    assert!(files.len() > 50, "the scan found only {} sources under {}", files.len(), root.display());
    let (mut read, mut mentioned) = (BTreeSet::new(), BTreeSet::new());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        read.extend(names(&text, true));
        mentioned.extend(names(&text, false));
    }
    // The two settings spelled only through `format!` in gpu/wgpu/q8_out.rs, and its knobs'
    // families, are in the sources' comments, which `mentioned` covers.
    assert!(read.contains("CMF_GPU") && read.contains("CORTIQ_HOME"), "the literal scan is blind: {read:?}");
    let undocumented: Vec<_> = read.difference(&documented).collect();
    assert!(undocumented.is_empty(), "settings the code reads that docs/settings.md does not list: {undocumented:?}");
    let stale: Vec<_> = documented.difference(&mentioned).collect();
    assert!(stale.is_empty(), "settings docs/settings.md lists that no source names: {stale:?}");
}

#[test]
fn names_are_found_whole_and_quoted_ones_apart() {
    let text = r#"var("CMF_GPU") // CMF_WGPU_INT8=1, xCMF_NOT, "CMF_WGPU_{name}", CORTIQ_TRACE_"#;
    assert_eq!(names(text, true).into_iter().collect::<Vec<_>>(), ["CMF_GPU"]);
    assert_eq!(names(text, false).into_iter().collect::<Vec<_>>(), ["CMF_GPU", "CMF_WGPU_INT8"]);
}
