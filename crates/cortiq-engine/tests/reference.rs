//! The real models (SmolLM2-135M-Instruct Q4_1, the default, and Gemma 3 270M Q4_K_M)
//! against llama.cpp's outputs on the same GGUF files (`shared/reference/`): greedy tokens
//! and perplexity.

mod common;

use cortiq_engine::generate::Engine;
use cortiq_engine::perplexity::perplexity;
use cortiq_engine::pipeline::Session;
use cortiq_engine::sample::argmax;
use std::sync::Arc;

/// Largest logit gap (ours - llama.cpp's choice) accepted as a near-tie where our argmax
/// differs. Measured noise of legitimate rounding choices on this model: llama.cpp's
/// flash-attention f16 accumulator vs its non-FA path moved these logits by up to ~0.15,
/// and one extra FMA accumulator in the int8 dot by up to ~0.26; a real bug moves them by
/// whole units.
const NEAR_TIE_LOGITS: f32 = 0.25;
/// The same for Gemma 3, whose Q4_K/Q6_K matmuls here take f32 activations where llama.cpp
/// quantizes them to q8_K: one more rounding apart (measured gaps up to 0.24).
const NEAR_TIE_LOGITS_GEMMA: f32 = 0.3;

struct Case {
    prompt: String,
    greedy: String,
}

fn load_cases(file: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(common::reference_dir().join(file)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_array().unwrap().iter().map(|c| Case { prompt: c["prompt"].as_str().unwrap().into(), greedy: c["greedy"].as_str().unwrap().into() }).collect()
}

/// Teacher-forced along llama.cpp's tokens: at every position our argmax must be
/// llama.cpp's token or lose to it by a near-tie only. Free-running greedy text is also
/// compared and reported. Returns (positions agreeing, positions, identical texts).
fn greedy_against(engine: &Engine, file: &str, near_tie: f32) -> (usize, usize, usize) {
    let (mut positions, mut agree, mut exact_texts) = (0, 0, 0);
    let cases = load_cases(file);
    for case in &cases {
        let prompt = engine.tokenize(&case.prompt).unwrap();
        let full = engine.tokenize(&(case.prompt.clone() + &case.greedy)).unwrap();
        assert!(full.starts_with(&prompt), "{:?}: prompt tokens are not a prefix", case.prompt);
        let reference = &full[prompt.len()..];
        let mut s = Session::new(Arc::clone(&engine.model), 256);
        let mut logits = s.prefill(&prompt).unwrap();
        for (i, &want) in reference.iter().enumerate() {
            let got = argmax(&logits);
            positions += 1;
            if got == want {
                agree += 1;
            } else {
                let (lg, lw) = (logits[got as usize], logits[want as usize]);
                eprintln!("{:?} pos {i}: ours {:?} {lg:.4} vs llama.cpp {:?} {lw:.4} (gap {:.4})", case.prompt, engine.tokenizer.decode(&[got]).unwrap(), engine.tokenizer.decode(&[want]).unwrap(), lg - lw);
                assert!(lg - lw <= near_tie, "{:?} pos {i}: not a near-tie ({lg} vs {lw})", case.prompt);
            }
            logits = s.step(want).unwrap();
        }
        let mut s = Session::new(Arc::clone(&engine.model), 256);
        let mut logits = s.prefill(&prompt).unwrap();
        let mut ours = Vec::new();
        for _ in 0..reference.len() {
            let t = argmax(&logits);
            ours.push(t);
            logits = s.step(t).unwrap();
        }
        let text = engine.tokenizer.decode(&ours).unwrap();
        if text == case.greedy {
            exact_texts += 1;
        } else {
            eprintln!("{:?}: free-running text differs:\n  ours:      {text:?}\n  llama.cpp: {:?}", case.prompt, case.greedy);
        }
    }
    eprintln!("{file}: {agree}/{positions} teacher-forced positions agree, {exact_texts}/{} texts identical", cases.len());
    (agree, positions, exact_texts)
}

#[test]
fn greedy_tokens_follow_llama_cpp_up_to_near_ties() {
    let Some(path) = common::default_model() else { return };
    let engine = Engine::load(&path).unwrap();
    let (agree, positions, exact) = greedy_against(&engine, "smollm2-greedy.json", NEAR_TIE_LOGITS);
    assert!(agree as f64 >= 0.95 * positions as f64, "only {agree}/{positions} positions agree");
    assert!(exact >= 2, "fewer than 2 of the reference texts reproduce exactly");
}

#[test]
fn gemma3_greedy_tokens_follow_llama_cpp_up_to_near_ties() {
    let Some(path) = common::model("gemma3-270m") else { return };
    let engine = Engine::load(&path).unwrap();
    let (agree, positions, exact) = greedy_against(&engine, "gemma3-greedy.json", NEAR_TIE_LOGITS_GEMMA);
    assert!(agree as f64 >= 0.95 * positions as f64, "only {agree}/{positions} positions agree");
    assert!(exact >= 2, "fewer than 2 of the reference texts reproduce exactly");
}

fn perplexity_of(path: &std::path::Path) -> cortiq_engine::perplexity::PerplexityResult {
    let engine = Engine::load(path).unwrap();
    let text = std::fs::read_to_string(common::reference_dir().join("gpl-3.txt")).unwrap();
    perplexity(&engine, &text, 512, |_, _, _| {}).unwrap()
}

/// llama.cpp: PPL 18.3914 on gpl-3.txt with 512-token chunks; within 1%.
#[test]
fn perplexity_matches_llama_cpp_within_one_percent() {
    let Some(path) = common::default_model() else { return };
    let r = perplexity_of(&path);
    eprintln!("PPL = {:.4} over {} chunks ({} scored tokens); llama.cpp 18.3914", r.ppl, r.chunks, r.scored_tokens);
    assert_eq!(r.chunks, 14, "llama.cpp cut the file into 14 chunks");
    assert!((r.ppl - 18.3914).abs() <= 0.01 * 18.3914, "PPL {} is not within 1% of 18.3914", r.ppl);
}

/// llama.cpp: Gemma 3 270M PPL 13.9062 on gpl-3.txt (BOS replaces each chunk's first token).
#[test]
fn gemma3_perplexity_matches_llama_cpp_within_one_percent() {
    let Some(path) = common::model("gemma3-270m") else { return };
    let r = perplexity_of(&path);
    eprintln!("gemma3 PPL = {:.4} over {} chunks ({} scored tokens); llama.cpp 13.9062", r.ppl, r.chunks, r.scored_tokens);
    assert!((r.ppl - 13.9062).abs() <= 0.01 * 13.9062, "PPL {} is not within 1% of 13.9062", r.ppl);
}

/// Streamed pieces concatenate to the whole decode, for both tokenizer kinds (byte-level BPE
/// and SentencePiece), across multi-byte characters split over tokens and leading spaces.
#[test]
fn streamed_text_equals_the_whole_decode() {
    use cortiq_engine::tokenizer::StreamDecoder;
    let texts = ["Hello world, this is a test.", "  leading spaces and caf\u{e9} cr\u{e8}me br\u{fb}l\u{e9}e", "\u{4e16}\u{754c} \u{1f680} emoji \u{1f469}\u{200d}\u{1f52c} and 123456", "line one\nline two\n\n  indented"];
    for name in ["smollm2-135m-instruct", "gemma3-270m"] {
        let Some(path) = common::model(name) else { continue };
        let engine = Engine::load(&path).unwrap();
        for text in texts {
            let ids = engine.tokenize(text).unwrap();
            let whole = engine.tokenizer.decode(&ids).unwrap();
            let mut dec = StreamDecoder::new();
            let mut streamed = String::new();
            for &id in &ids {
                if let Some(piece) = dec.push(&engine.tokenizer, id).unwrap() {
                    streamed.push_str(&piece);
                }
            }
            assert_eq!(streamed, whole, "{name}: {text:?} ({} tokens)", ids.len());
        }
    }
}

/// SmolLM2 adds no BOS: an empty raw prompt has nothing to condition on.
#[test]
fn empty_prompt_without_bos_is_a_clear_error() {
    let Some(path) = common::default_model() else { return };
    let engine = Engine::load(&path).unwrap();
    let tokens = engine.tokenize("").unwrap();
    assert!(tokens.is_empty());
    let mut s = Session::new(Arc::clone(&engine.model), 64);
    let e = engine.generate(&mut s, &tokens, 4, Default::default(), &Default::default(), |_| {}).unwrap_err();
    assert!(e.to_string().contains("empty prompt"), "{e}");
}
