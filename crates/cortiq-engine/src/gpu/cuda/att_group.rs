//! Where the decode attention takes one block per KV head's chunk for all its query heads
//! (graph.cu's `attention_group` in the 128-wide head kernel, `attention_group64` for heads of
//! 64) instead of one block per query head. At long contexts the per-head blocks read each K / V chunk once per query head
//! (llama: 4 times); grouped, it is read once. With few chunks the grouped grid leaves SMs
//! idle and each block works G heads in a row, so it loses there. The kernel picks the path
//! per token from the context length, so one captured graph serves both.
//!
//! Measured on the H200 (NOTES.md, session 42; tg128 after a P-token prompt). Grouped from 0
//! positions against never: llama-8b q4_0 P 512 -5 %, 1024 +2 %, 2048 +7 %, 4096 +14 %; with
//! V in shared memory at 64 too, llama-1b and smollm2 (4 and 3 query heads a KV head) gained
//! from P 1024 and 4096, but those 16 KB a block cost llama-1b 2.8 % where it ran per head,
//! so heads of 64 keep V in registers on the grouped path (`attention_group64`). By this
//! rule, against the build before: P 512 unchanged on every shape; llama-8b q4_0 +7.6 % (P
//! 2048) and +14.4 % (4096), q8_0 +12.2 % (4096); llama-1b q4_0 +12.8 % (2048) and +20.7 %
//! (4096); smollm2 q4_0 unchanged at 2048 (grouped from 2753) and +12.3 % at 4096.

use super::graph::ATT_CHUNK as CHUNK;

/// The grouped path's threshold as the kernels' `group_from` argument: `setting` where set
/// (`CMF_CUDA_ATT_GROUP_FROM`), else the context at which the grouped grid (KV heads x chunks)
/// has a block for each of the `sms` SMs.
pub(super) fn group_from(setting: Option<i32>, n_head_kv: usize, sms: u32) -> i32 {
    setting.unwrap_or_else(|| {
        let chunks = (sms as usize).div_ceil(n_head_kv.max(1));
        ((chunks.max(2) - 1) * CHUNK + 1).min(i32::MAX as usize) as i32
    })
}

/// `CMF_CUDA_ATT_GROUP_FROM`: a number of positions, `never`, or unset (None: the rule).
pub(super) fn parse(value: Option<&str>) -> Result<Option<i32>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some("never") => Ok(Some(i32::MAX)),
        Some(v) => v.parse::<i32>().ok().filter(|n| *n >= 0).map(Some).ok_or_else(|| format!("CMF_CUDA_ATT_GROUP_FROM={v:?}: expected a number of positions (0 or more), never, or unset")),
    }
}

/// The setting as `cortiq gpu` lists it.
pub(super) fn describe(setting: Option<i32>, sms: u32) -> String {
    match setting {
        None => format!("heads of 64 or 80-128 values, from the context at which KV heads x 64-position chunks reach the {sms} SMs (llama-8b: {} positions; CMF_CUDA_ATT_GROUP_FROM)", group_from(None, 8, sms)),
        Some(i32::MAX) => "never (CMF_CUDA_ATT_GROUP_FROM=never)".to_string(),
        Some(n) => format!("heads of 64 or 80-128 values, from {n} positions (CMF_CUDA_ATT_GROUP_FROM)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_parses_positions_or_never_and_names_the_setting_when_wrong() {
        assert_eq!(parse(None), Ok(None));
        assert_eq!(parse(Some(" ")), Ok(None));
        assert_eq!(parse(Some("0")), Ok(Some(0)));
        assert_eq!(parse(Some(" 2048 ")), Ok(Some(2048)));
        assert_eq!(parse(Some("never")), Ok(Some(i32::MAX)));
        for bad in ["-1", "lots", "1e3", "99999999999"] {
            assert!(parse(Some(bad)).unwrap_err().contains("CMF_CUDA_ATT_GROUP_FROM"), "{bad}");
        }
        assert!(describe(Some(i32::MAX), 132).contains("never"));
        assert!(describe(Some(512), 132).contains("512"));
        assert!(describe(None, 132).contains("1025"));
    }

    #[test]
    fn by_default_the_grouped_grid_first_reaches_every_sm() {
        // H200, 8 KV heads: 17 chunks (136 blocks) from position 1025 on; 16 (128) before.
        assert_eq!(group_from(None, 8, 132), 1025);
        for (kv, sms) in [(8, 132), (3, 132), (1, 132), (8, 8), (4, 16), (32, 132)] {
            let from = group_from(None, kv, sms) as usize;
            let blocks = |n: usize| kv * n.div_ceil(CHUNK);
            assert!(blocks(from) >= sms as usize, "{kv} KV heads, {sms} SMs: {from}");
            assert!(from > CHUNK, "{kv} KV heads, {sms} SMs: a single chunk never groups");
            if from > CHUNK + 1 {
                assert!(blocks(from - 1) < sms as usize, "{kv} KV heads, {sms} SMs: {from} is not the first");
            }
        }
        assert_eq!(group_from(Some(7), 8, 132), 7);
    }
}
