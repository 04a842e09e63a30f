//! `cortiq convert IN OUT [--codec keep|f16|q8_row|q4_tiled|...]`: rewrite a model as CMF
//! (or GGUF when OUT ends in .gguf), requantizing matrices where asked.

use anyhow::{bail, Context, Result};
use cortiq_core::cmf::{CmfTensor, CmfWriter};
use cortiq_core::gguf::{GgufWriter, TensorSpec};
use cortiq_core::{Codec, ModelFile, TensorInfo, Value};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::path::Path;

/// The codec a tensor gets: vectors and rows that do not fit the target's blocks keep theirs;
/// Q4_0 -> q4_tiled is a relabel (identical bytes).
fn target_codec(t: &TensorInfo, want: Option<Codec>) -> Codec {
    match want {
        None => t.codec,
        Some(c) if t.shape.len() < 2 || !t.cols().is_multiple_of(c.block_len() as u64) => t.codec,
        Some(c) => c,
    }
}

/// Encode one tensor's rows in the target codec (decode to f32 row by row, repack).
fn encode(src: &ModelFile, t: &TensorInfo, to: Codec) -> Result<Vec<u8>> {
    let bytes = src.tensor_data(t);
    let same = to == t.codec || matches!((t.codec, to), (Codec::Q4_0, Codec::Q4Tiled) | (Codec::Q4Tiled, Codec::Q4_0));
    if same {
        return Ok(bytes.to_vec());
    }
    let cols = t.cols() as usize;
    let rb = t.codec.row_bytes(cols as u64).context("row size")? as usize;
    let rows: Vec<Vec<u8>> = bytes
        .par_chunks(rb)
        .map(|row| {
            let mut f = vec![0f32; cols];
            t.codec.unpack_row(row, &mut f)?;
            to.pack_row(&f)
        })
        .collect::<Result<_, _>>()?;
    Ok(rows.concat())
}

pub fn convert(input: &Path, output: &Path, codec: &str) -> Result<()> {
    let src = ModelFile::open(input).with_context(|| format!("reading {}", input.display()))?;
    let want = match codec {
        "keep" => None,
        other => Some(Codec::from_name(other).with_context(|| {
            let names: Vec<&str> = cortiq_core::codec::ALL_CODECS.iter().map(|c| c.name()).collect();
            format!("unknown codec '{other}' (keep, {})", names.join(", "))
        })?),
    };
    let as_gguf = output.extension().is_some_and(|e| e == "gguf");
    let mut metadata: Vec<(String, Value)> = src.metadata.iter().filter(|(k, _)| !k.starts_with("cmf.source")).cloned().collect();
    if !as_gguf {
        metadata.push(("cmf.source.format".into(), Value::Str(src.format.to_string())));
        metadata.push(("cmf.source.file".into(), Value::Str(input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())));
        metadata.push(("cmf.source.codec".into(), Value::Str(codec.to_string())));
    }
    let plan: Vec<(TensorInfo, Codec)> = src.tensors.iter().map(|t| (t.clone(), target_codec(t, want))).collect();
    if as_gguf {
        if let Some((t, c)) = plan.iter().find(|(_, c)| c.ggml_type().is_none()) {
            bail!("tensor '{}' would be {c}, which GGUF cannot store; write .cmf instead", t.name);
        }
    }
    let total: u64 = plan.iter().map(|(t, _)| t.nbytes).sum();
    let bar = ProgressBar::new(total);
    bar.set_style(ProgressStyle::with_template("convert {bar:40} {bytes}/{total_bytes} {msg}").expect("static template"));
    // Write to a temp name next to the target, rename when complete: a failed conversion
    // never leaves a truncated model under the real name.
    let tmp = output.with_extension("partial");
    let file = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let result = (|| -> Result<()> {
        if as_gguf {
            let specs = plan.iter().map(|(t, c)| TensorSpec { name: t.name.clone(), shape: t.shape.clone(), codec: if *c == Codec::Q4Tiled { Codec::Q4_0 } else { *c } }).collect();
            let mut w = GgufWriter::new(std::io::BufWriter::new(file), &metadata, specs)?;
            for (t, c) in &plan {
                bar.set_message(t.name.clone());
                w.write_tensor(&encode(&src, t, *c)?)?;
                bar.inc(t.nbytes);
            }
            w.finish()?;
        } else {
            let specs = plan.iter().map(|(t, c)| CmfTensor { name: t.name.clone(), shape: t.shape.clone(), codec: *c }).collect();
            let mut w = CmfWriter::new(std::io::BufWriter::new(file), metadata, specs)?;
            for (t, c) in &plan {
                bar.set_message(t.name.clone());
                w.write_tensor(&encode(&src, t, *c)?)?;
                bar.inc(t.nbytes);
            }
            w.finish()?;
        }
        Ok(())
    })();
    bar.finish_and_clear();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, output).with_context(|| format!("renaming to {}", output.display()))?;
    let back = ModelFile::open(output).with_context(|| format!("re-reading {}", output.display()))?;
    back.verify_checksums()?;
    eprintln!("cortiq: wrote {} ({} tensors, {} bytes)", output.display(), back.tensors.len(), back.file_size());
    Ok(())
}
