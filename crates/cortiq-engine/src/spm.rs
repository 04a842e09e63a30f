//! The SentencePiece-style tokenizer of GGUF `tokenizer.ggml.model = "llama"` vocabularies
//! (Gemma, Llama 2), as llama.cpp runs it: spaces become U+2581, symbols start as single
//! characters, the adjacent pair whose merge is a vocabulary entry with the highest score is
//! merged first (ties: leftmost), and pieces with no entry fall back to `<0xXX>` byte tokens.

use std::collections::{BinaryHeap, HashMap};

/// One bigram candidate in the merge queue.
#[derive(PartialEq)]
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    /// Byte length of the merged text (a stale entry no longer matches it).
    size: usize,
}

impl Eq for Bigram {}

impl Ord for Bigram {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Max-heap on score; on equal scores the leftmost pair first.
        self.score.total_cmp(&other.score).then(other.left.cmp(&self.left))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A symbol of the text being merged: a byte range and its neighbours.
#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

pub struct Spm {
    ids: HashMap<String, u32>,
    scores: Vec<f32>,
    byte_tokens: [Option<u32>; 256],
    unknown: Option<u32>,
}

impl Spm {
    pub fn new(tokens: &[String], scores: Vec<f32>, unknown: Option<u32>) -> Spm {
        let ids: HashMap<String, u32> = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let mut byte_tokens = [None; 256];
        for (b, slot) in byte_tokens.iter_mut().enumerate() {
            *slot = ids.get(&format!("<0x{b:02X}>")).copied();
        }
        Spm { ids, scores, byte_tokens, unknown }
    }

    /// Token ids of `text` (no special-token handling here; the caller splits those out).
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) {
        let text = text.replace(' ', "\u{2581}");
        if text.is_empty() {
            return;
        }
        let mut syms: Vec<Symbol> = Vec::new();
        for (i, (start, ch)) in text.char_indices().enumerate() {
            syms.push(Symbol { start, len: ch.len_utf8(), prev: i.checked_sub(1), next: None });
            if i > 0 {
                syms[i - 1].next = Some(i);
            }
        }
        let mut queue = BinaryHeap::new();
        let try_add = |queue: &mut BinaryHeap<Bigram>, syms: &[Symbol], l: Option<usize>, r: Option<usize>| {
            let (Some(l), Some(r)) = (l, r) else { return };
            let (a, b) = (syms[l], syms[r]);
            let piece = &text[a.start..b.start + b.len];
            if let Some(&id) = self.ids.get(piece) {
                queue.push(Bigram { score: self.scores.get(id as usize).copied().unwrap_or(0.0), left: l, right: r, size: piece.len() });
            }
        };
        for i in 1..syms.len() {
            try_add(&mut queue, &syms, Some(i - 1), Some(i));
        }
        while let Some(bg) = queue.pop() {
            let (l, r) = (syms[bg.left], syms[bg.right]);
            if l.len == 0 || r.len == 0 || l.len + r.len != bg.size {
                continue;
            }
            syms[bg.left].len += r.len;
            syms[bg.right].len = 0;
            syms[bg.left].next = r.next;
            if let Some(n) = r.next {
                syms[n].prev = Some(bg.left);
            }
            try_add(&mut queue, &syms, syms[bg.left].prev, Some(bg.left));
            try_add(&mut queue, &syms, Some(bg.left), syms[bg.left].next);
        }
        let mut i = Some(0);
        while let Some(k) = i {
            let s = syms[k];
            self.emit(&text[s.start..s.start + s.len], out);
            i = s.next;
        }
    }

    /// Emit the token of a final symbol. Merged symbols are vocabulary entries by
    /// construction; a single character without an entry falls back to its bytes.
    fn emit(&self, piece: &str, out: &mut Vec<u32>) {
        if let Some(&id) = self.ids.get(piece) {
            out.push(id);
            return;
        }
        for &b in piece.as_bytes() {
            match self.byte_tokens[b as usize].or(self.unknown) {
                Some(id) => out.push(id),
                None => continue,
            }
        }
    }
}

/// The text of SentencePiece pieces: U+2581 is a space, `<0xXX>` pieces are raw bytes.
pub fn decode_pieces<'a>(pieces: impl Iterator<Item = &'a str>) -> String {
    let mut bytes = Vec::new();
    for p in pieces {
        let is_byte = p.len() == 6 && p.starts_with("<0x") && p.ends_with('>');
        match (is_byte, u8::from_str_radix(p.get(3..5).unwrap_or(""), 16)) {
            (true, Ok(b)) => bytes.push(b),
            _ => bytes.extend_from_slice(p.replace('\u{2581}', " ").as_bytes()),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Spm {
        let toks: Vec<String> = ["<unk>", "a", "b", "c", "ab", "abc", "\u{2581}", "\u{2581}a", "<0x78>", "<0x79>"].iter().map(|s| s.to_string()).collect();
        let scores = vec![0.0, -1.0, -1.0, -1.0, -2.0, -3.0, -1.0, -0.5, 0.0, 0.0];
        Spm::new(&toks, scores, Some(0))
    }

    #[test]
    fn merges_by_score_and_falls_back_to_bytes() {
        let v = vocab();
        let mut out = Vec::new();
        v.encode("abc", &mut out);
        assert_eq!(out, vec![5]);
        out.clear();
        v.encode(" ab", &mut out);
        // "▁a" (score -0.5) merges before "ab" (-2.0): ▁a + b.
        assert_eq!(out, vec![7, 2]);
        out.clear();
        v.encode("xy", &mut out);
        assert_eq!(out, vec![8, 9], "unknown characters become byte tokens");
        assert_eq!(decode_pieces(["\u{2581}a", "b", "<0x78>"].into_iter()), " abx");
    }
}
