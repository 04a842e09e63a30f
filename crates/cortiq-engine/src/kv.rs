//! The host KV cache: per layer, K and V rows of `kv_dim` values for each cached position,
//! stored as f16 (llama.cpp's default cache type: same values, half the memory traffic).

use half::slice::HalfFloatSliceExt;
use half::f16;

pub struct KvCache {
    kv_dim: usize,
    capacity: usize,
    len: usize,
    /// Per layer: (capacity, kv_dim), filled up to `len`.
    k: Vec<Vec<f16>>,
    v: Vec<Vec<f16>>,
}

impl KvCache {
    /// An empty cache for `n_layer` layers and up to `capacity` positions (memory grows as used).
    pub fn new(n_layer: usize, kv_dim: usize, capacity: usize) -> Self {
        KvCache { kv_dim, capacity, len: 0, k: vec![Vec::new(); n_layer], v: vec![Vec::new(); n_layer] }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forget everything from position `pos` on (reset with 0, roll back with a smaller value).
    pub fn truncate(&mut self, pos: usize) {
        self.len = self.len.min(pos);
        for l in self.k.iter_mut().chain(self.v.iter_mut()) {
            l.truncate(self.len * self.kv_dim);
        }
    }

    /// Append rows for positions `pos..pos + n` of `layer` (k, v: (n, kv_dim)).
    pub fn write(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let start = pos * self.kv_dim;
        for (dst, src) in [(&mut self.k[layer], k), (&mut self.v[layer], v)] {
            dst.truncate(start);
            dst.resize(start + src.len(), f16::ZERO);
            dst[start..].convert_from_f32_slice(src);
        }
    }

    /// Mark positions up to `len` as valid (after every layer wrote them).
    pub fn set_len(&mut self, len: usize) {
        self.len = len;
    }

    /// Write rows already in f16 (a device mirror pulled back) for positions pos.. of `layer`.
    pub fn write_f16(&mut self, layer: usize, pos: usize, k: &[f16], v: &[f16]) {
        let start = pos * self.kv_dim;
        for (dst, src) in [(&mut self.k[layer], k), (&mut self.v[layer], v)] {
            dst.truncate(start);
            dst.extend_from_slice(src);
        }
    }

    pub fn n_layer(&self) -> usize {
        self.k.len()
    }

    pub fn kv_dim(&self) -> usize {
        self.kv_dim
    }

    /// K rows of `layer` for positions 0..n: (n, kv_dim).
    pub fn keys(&self, layer: usize, n: usize) -> &[f16] {
        &self.k[layer][..n * self.kv_dim]
    }

    pub fn values(&self, layer: usize, n: usize) -> &[f16] {
        &self.v[layer][..n * self.kv_dim]
    }
}
