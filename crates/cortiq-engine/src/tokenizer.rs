//! Tokenizers from GGUF metadata (`gpt2`-style byte-level BPE) or a Hugging Face
//! `tokenizer.json`, built on the `tokenizers` crate. BOS/EOS as the metadata says;
//! control tokens are special (matched in text, never split).

use crate::error::EngineError;
use crate::spm::{decode_pieces, Spm};
use cortiq_core::{ModelFile, Value};
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

/// llama.cpp token types (`tokenizer.ggml.token_type`).
const TOKEN_CONTROL: u64 = 3;
const TOKEN_USER_DEFINED: u64 = 4;

/// The Llama-3 pre-tokenizer split ("llama-bpe" in GGUF).
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The encoder behind a `Tokenizer`.
enum Inner {
    /// Byte-level BPE or a Hugging Face tokenizer.json, through the `tokenizers` crate.
    Hf(Box<tokenizers::Tokenizer>),
    /// SentencePiece-style vocabularies, with their special tokens split out first.
    Spm(Box<SpmState>),
}

/// A SentencePiece vocabulary and what decoding and special-token splitting need.
struct SpmState {
    spm: Spm,
    tokens: Vec<String>,
    types: Vec<u64>,
    /// Control and user-defined tokens, longest first.
    specials: Vec<(String, u32)>,
}

pub struct Tokenizer {
    inner: Inner,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// Whether prompts start with BOS (`tokenizer.ggml.add_bos_token`).
    pub add_bos: bool,
    /// Ids that end a generation (EOS, EOT, `<|im_end|>`-style end markers).
    end_of_generation: Vec<u32>,
    pub vocab_size: usize,
}

fn tok_err(e: impl std::fmt::Display) -> EngineError {
    EngineError::Tokenizer(e.to_string())
}

impl Tokenizer {
    /// Build the tokenizer a model file describes.
    pub fn from_model(m: &ModelFile) -> Result<Self, EngineError> {
        if let Some(path) = m.meta_str("tokenizer.huggingface.json") {
            let inner = tokenizers::Tokenizer::from_file(path).map_err(tok_err)?;
            let vocab_size = inner.get_vocab_size(true);
            let eos = ["</s>", "<|endoftext|>", "<|eot_id|>", "<|im_end|>"].iter().find_map(|t| inner.token_to_id(t));
            let bos = ["<s>", "<|begin_of_text|>"].iter().find_map(|t| inner.token_to_id(t));
            return Ok(Tokenizer { inner: Inner::Hf(Box::new(inner)), bos, eos, add_bos: bos.is_some(), end_of_generation: eos.into_iter().collect(), vocab_size });
        }
        let kind = m.meta_str("tokenizer.ggml.model").ok_or_else(|| EngineError::MissingMetadata("tokenizer.ggml.model".into()))?;
        if kind == "llama" {
            return Self::sentencepiece(m);
        }
        if kind != "gpt2" {
            return Err(EngineError::Tokenizer(format!("tokenizer model '{kind}' is not supported (this build reads 'gpt2' byte-level BPE and 'llama' SentencePiece)")));
        }
        let tokens = string_array(m, "tokenizer.ggml.tokens")?;
        let merges = string_array(m, "tokenizer.ggml.merges")?;
        let types: Vec<u64> = m.meta("tokenizer.ggml.token_type").and_then(Value::as_array).map(|a| a.iter().map(|v| v.as_u64().unwrap_or(1)).collect()).unwrap_or_default();
        let vocab: tokenizers::models::bpe::Vocab = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let merges: Vec<(String, String)> = merges
            .iter()
            .map(|s| s.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())).ok_or_else(|| EngineError::Tokenizer(format!("merge {s:?} has no space"))))
            .collect::<Result<_, _>>()?;
        let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(tok_err)?;
        let mut inner = tokenizers::Tokenizer::new(bpe);
        let pre = m.meta_str("tokenizer.ggml.pre").unwrap_or("default");
        inner.with_pre_tokenizer(Some(pre_tokenizer(pre)?));
        inner.with_decoder(Some(ByteLevel::default()));
        let specials: Vec<AddedToken> = tokens
            .iter()
            .zip(&types)
            .filter(|(_, &t)| t == TOKEN_CONTROL || t == TOKEN_USER_DEFINED)
            .map(|(s, &t)| AddedToken::from(s.clone(), t == TOKEN_CONTROL))
            .collect();
        inner.add_special_tokens(&specials);
        let id = |k: &str| m.meta_u64(k).map(|v| v as u32).filter(|&v| (v as usize) < tokens.len());
        let eos = id("tokenizer.ggml.eos_token_id");
        let end_of_generation = end_of_generation(&tokens, eos, id("tokenizer.ggml.eot_token_id"));
        Ok(Tokenizer {
            inner: Inner::Hf(Box::new(inner)),
            bos: id("tokenizer.ggml.bos_token_id"),
            eos,
            add_bos: m.meta("tokenizer.ggml.add_bos_token").and_then(Value::as_bool).unwrap_or(false),
            end_of_generation,
            vocab_size: tokens.len(),
        })
    }

    /// A SentencePiece-style vocabulary (`tokenizer.ggml.model = "llama"`).
    fn sentencepiece(m: &ModelFile) -> Result<Self, EngineError> {
        let tokens = string_array(m, "tokenizer.ggml.tokens")?;
        let scores: Vec<f32> = m.meta("tokenizer.ggml.scores").and_then(Value::as_array).map(|a| a.iter().map(|v| v.as_f64().unwrap_or(0.0) as f32).collect()).unwrap_or_default();
        let types: Vec<u64> = m.meta("tokenizer.ggml.token_type").and_then(Value::as_array).map(|a| a.iter().map(|v| v.as_u64().unwrap_or(1)).collect()).unwrap_or_default();
        let id = |k: &str| m.meta_u64(k).map(|v| v as u32).filter(|&v| (v as usize) < tokens.len());
        let mut specials: Vec<(String, u32)> = tokens
            .iter()
            .zip(&types)
            .enumerate()
            .filter(|(_, (t, &ty))| (ty == TOKEN_CONTROL || ty == TOKEN_USER_DEFINED) && !t.is_empty())
            .map(|(i, (t, _))| (t.clone(), i as u32))
            .collect();
        // Longest first, so "<start_of_turn>" wins over any shorter prefix.
        specials.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
        let spm = Spm::new(&tokens, scores, id("tokenizer.ggml.unknown_token_id"));
        let eos = id("tokenizer.ggml.eos_token_id");
        let end_of_generation = end_of_generation(&tokens, eos, id("tokenizer.ggml.eot_token_id"));
        let vocab_size = tokens.len();
        let bos = id("tokenizer.ggml.bos_token_id");
        Ok(Tokenizer {
            inner: Inner::Spm(Box::new(SpmState { spm, tokens, types, specials })),
            bos,
            eos,
            add_bos: m.meta("tokenizer.ggml.add_bos_token").and_then(Value::as_bool).unwrap_or(true),
            end_of_generation,
            vocab_size,
        })
    }

    /// Token ids of `text` (special tokens in the text are recognised), BOS first if `add_bos`.
    pub fn encode(&self, text: &str, add_bos: bool) -> Result<Vec<u32>, EngineError> {
        let mut ids = Vec::new();
        if add_bos {
            ids.extend(self.bos);
        }
        match &self.inner {
            Inner::Hf(t) => ids.extend_from_slice(t.encode(text, false).map_err(tok_err)?.get_ids()),
            Inner::Spm(st) => {
                let (spm, specials) = (&st.spm, &st.specials);
                // Split out special tokens, SentencePiece-encode the text between them.
                let mut rest = text;
                'scan: while !rest.is_empty() {
                    for (at, _) in rest.char_indices() {
                        if let Some((s, id)) = specials.iter().find(|(s, _)| rest[at..].starts_with(s.as_str())) {
                            spm.encode(&rest[..at], &mut ids);
                            ids.push(*id);
                            rest = &rest[at + s.len()..];
                            continue 'scan;
                        }
                    }
                    spm.encode(rest, &mut ids);
                    break;
                }
            }
        }
        Ok(ids)
    }

    /// Text of `ids` (special tokens rendered as their text).
    pub fn decode(&self, ids: &[u32]) -> Result<String, EngineError> {
        match &self.inner {
            Inner::Hf(t) => t.decode(ids, false).map_err(tok_err),
            Inner::Spm(st) => {
                let (tokens, types) = (&st.tokens, &st.types);
                let piece = |&i: &u32| tokens.get(i as usize).map(String::as_str).unwrap_or("");
                // Control tokens print nothing (llama.cpp's default); user-defined ones print.
                Ok(decode_pieces(ids.iter().filter(|&&i| types.get(i as usize) != Some(&TOKEN_CONTROL)).map(piece)))
            }
        }
    }

    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.end_of_generation.contains(&id)
    }

    /// The text of one token (for templates: BOS/EOS strings).
    pub fn token_text(&self, id: u32) -> Option<String> {
        match &self.inner {
            Inner::Hf(t) => t.id_to_token(id),
            Inner::Spm(st) => st.tokens.get(id as usize).cloned(),
        }
    }
}

/// Turn-end markers of the chat formats cortiq knows; any present in a vocabulary ends a
/// generation, like EOS and EOT.
const END_MARKERS: [&str; 4] = ["<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>"];

/// EOS, EOT and the ids of the turn-end markers present in `tokens`.
fn end_of_generation(tokens: &[String], eos: Option<u32>, eot: Option<u32>) -> Vec<u32> {
    let markers = END_MARKERS.iter().filter_map(|m| tokens.iter().position(|t| t == m).map(|i| i as u32));
    eos.into_iter().chain(eot).chain(markers).collect()
}

fn string_array(m: &ModelFile, key: &str) -> Result<Vec<String>, EngineError> {
    let arr = m.meta(key).and_then(Value::as_array).ok_or_else(|| EngineError::MissingMetadata(key.into()))?;
    arr.iter().map(|v| v.as_str().map(str::to_string).ok_or_else(|| EngineError::Tokenizer(format!("{key} holds a non-string")))).collect()
}

/// The pre-tokenizer llama.cpp uses for a `tokenizer.ggml.pre` name.
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, EngineError> {
    let byte_level = |regex: bool| PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, regex));
    Ok(match pre {
        // Digits one by one, then the GPT-2 split.
        "smollm" | "starcoder" | "refact" | "codeshell" => PreTokenizerWrapper::Sequence(Sequence::new(vec![PreTokenizerWrapper::Digits(Digits::new(true)), byte_level(true)])),
        "llama-bpe" | "llama3" => {
            let split = Split::new(SplitPattern::Regex(LLAMA3_SPLIT.into()), SplitDelimiterBehavior::Isolated, false).map_err(tok_err)?;
            PreTokenizerWrapper::Sequence(Sequence::new(vec![PreTokenizerWrapper::Split(split), byte_level(false)]))
        }
        _ => byte_level(true),
    })
}

/// Turns a stream of token ids into text pieces, holding back bytes of an unfinished
/// UTF-8 character until the token that completes it arrives. Each step decodes only a
/// window from the last emitted token (`prefix`) on, and emits what that window adds past
/// the text of its already-emitted part: linear in the reply's length, and the same text
/// as decoding the whole reply (decoders that strip a leading space strip it from both
/// decodes of the window alike).
pub struct StreamDecoder {
    ids: Vec<u32>,
    /// Start of the decode window: the first token of the last emitted piece.
    prefix: usize,
    /// Tokens up to here have been emitted.
    read: usize,
}

impl StreamDecoder {
    pub fn new() -> Self {
        StreamDecoder { ids: Vec::new(), prefix: 0, read: 0 }
    }

    /// Add a token; return the new text, if any is complete.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<Option<String>, EngineError> {
        self.ids.push(id);
        let done = tok.decode(&self.ids[self.prefix..self.read])?;
        let text = tok.decode(&self.ids[self.prefix..])?;
        if text.ends_with('\u{FFFD}') || text.len() <= done.len() || !text.is_char_boundary(done.len()) {
            return Ok(None);
        }
        let piece = text[done.len()..].to_string();
        self.prefix = self.read;
        self.read = self.ids.len();
        Ok(Some(piece))
    }
}

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}
