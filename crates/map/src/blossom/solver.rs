//! The blossom algorithm's state and steps: alternating trees with S/T labels, blossom
//! creation and expansion, augmentation, and the four kinds of dual update (Galil 1986).

const NONE: usize = usize::MAX;

/// The state of the primal-dual algorithm (Galil's notation, van Rantwijk's layout).
pub(super) struct Blossom {
    n: usize,
    edges: Vec<(usize, usize, i64)>,
    endpoint: Vec<usize>,
    neighbend: Vec<Vec<usize>>,
    mate: Vec<usize>,
    label: Vec<u8>,
    labelend: Vec<usize>,
    inblossom: Vec<usize>,
    parent: Vec<usize>,
    childs: Vec<Vec<usize>>,
    base: Vec<usize>,
    endps: Vec<Vec<usize>>,
    bestedge: Vec<usize>,
    bestedges: Vec<Option<Vec<usize>>>,
    unused: Vec<usize>,
    dual: Vec<i64>,
    allow: Vec<bool>,
    queue: Vec<usize>,
}

impl Blossom {
    pub(super) fn new(n: usize, edges: Vec<(usize, usize, i64)>) -> Blossom {
        let maxw = edges.iter().map(|e| e.2).max().unwrap_or(0).max(0);
        let mut endpoint = Vec::with_capacity(2 * edges.len());
        let mut neighbend = vec![Vec::with_capacity(n - 1); n];
        for (k, &(i, j, _)) in edges.iter().enumerate() {
            endpoint.push(i);
            endpoint.push(j);
            neighbend[i].push(2 * k + 1);
            neighbend[j].push(2 * k);
        }
        let m = edges.len();
        Blossom {
            n,
            edges,
            endpoint,
            neighbend,
            mate: vec![NONE; n],
            label: vec![0; 2 * n],
            labelend: vec![NONE; 2 * n],
            inblossom: (0..n).collect(),
            parent: vec![NONE; 2 * n],
            childs: vec![Vec::new(); 2 * n],
            base: (0..n).chain(std::iter::repeat_n(NONE, n)).collect(),
            endps: vec![Vec::new(); 2 * n],
            bestedge: vec![NONE; 2 * n],
            bestedges: vec![None; 2 * n],
            unused: (n..2 * n).collect(),
            dual: std::iter::repeat_n(maxw, n)
                .chain(std::iter::repeat_n(0, n))
                .collect(),
            allow: vec![false; m],
            queue: Vec::new(),
        }
    }

    fn slack(&self, k: usize) -> i64 {
        let (i, j, wt) = self.edges[k];
        self.dual[i] + self.dual[j] - 2 * wt
    }

    fn leaves(&self, b: usize, out: &mut Vec<usize>) {
        if b < self.n {
            out.push(b);
            return;
        }
        for &t in &self.childs[b] {
            self.leaves(t, out);
        }
    }

    fn leaves_of(&self, b: usize) -> Vec<usize> {
        let mut v = Vec::new();
        self.leaves(b, &mut v);
        v
    }

    fn assign_label(&mut self, w: usize, t: u8, p: usize) {
        let b = self.inblossom[w];
        self.label[w] = t;
        self.label[b] = t;
        self.labelend[w] = p;
        self.labelend[b] = p;
        self.bestedge[w] = NONE;
        self.bestedge[b] = NONE;
        if t == 1 {
            let leaves = self.leaves_of(b);
            self.queue.extend(leaves);
        } else if t == 2 {
            let mb = self.mate[self.base[b]];
            self.assign_label(self.endpoint[mb], 1, mb ^ 1);
        }
    }

    /// Traces back from v and w to find a new blossom's base, or NONE for an augmenting path.
    fn scan_blossom(&mut self, mut v: usize, mut w: usize) -> usize {
        let mut path = Vec::new();
        let mut base = NONE;
        while v != NONE || w != NONE {
            let mut b = self.inblossom[v];
            if self.label[b] & 4 != 0 {
                base = self.base[b];
                break;
            }
            path.push(b);
            self.label[b] = 5;
            if self.labelend[b] == NONE {
                v = NONE;
            } else {
                v = self.endpoint[self.labelend[b]];
                b = self.inblossom[v];
                v = self.endpoint[self.labelend[b]];
            }
            if w != NONE {
                std::mem::swap(&mut v, &mut w);
            }
        }
        for b in path {
            self.label[b] = 1;
        }
        base
    }

    fn add_blossom(&mut self, base: usize, k: usize) {
        let (mut v, mut w, _) = self.edges[k];
        let bb = self.inblossom[base];
        let mut bv = self.inblossom[v];
        let mut bw = self.inblossom[w];
        let b = self.unused.pop().expect("blossom slots");
        self.base[b] = base;
        self.parent[b] = NONE;
        self.parent[bb] = b;
        let mut path = Vec::new();
        let mut endps = Vec::new();
        while bv != bb {
            self.parent[bv] = b;
            path.push(bv);
            endps.push(self.labelend[bv]);
            v = self.endpoint[self.labelend[bv]];
            bv = self.inblossom[v];
        }
        path.push(bb);
        path.reverse();
        endps.reverse();
        endps.push(2 * k);
        while bw != bb {
            self.parent[bw] = b;
            path.push(bw);
            endps.push(self.labelend[bw] ^ 1);
            w = self.endpoint[self.labelend[bw]];
            bw = self.inblossom[w];
        }
        self.label[b] = 1;
        self.labelend[b] = self.labelend[bb];
        self.dual[b] = 0;
        self.childs[b] = path.clone();
        self.endps[b] = endps;
        for v in self.leaves_of(b) {
            if self.label[self.inblossom[v]] == 2 {
                self.queue.push(v);
            }
            self.inblossom[v] = b;
        }
        self.compute_best_edges(b, &path);
    }

    /// Least-slack edges from the new blossom `b` to each other S-blossom.
    fn compute_best_edges(&mut self, b: usize, path: &[usize]) {
        let mut bestto = vec![NONE; 2 * self.n];
        for &bv in path {
            let lists: Vec<Vec<usize>> = match self.bestedges[bv].take() {
                Some(l) => vec![l],
                None => self
                    .leaves_of(bv)
                    .into_iter()
                    .map(|v| self.neighbend[v].iter().map(|p| p / 2).collect())
                    .collect(),
            };
            for list in lists {
                for k in list {
                    let (mut i, mut j, _) = self.edges[k];
                    if self.inblossom[j] == b {
                        std::mem::swap(&mut i, &mut j);
                    }
                    let _ = i;
                    let bj = self.inblossom[j];
                    if bj != b
                        && self.label[bj] == 1
                        && (bestto[bj] == NONE || self.slack(k) < self.slack(bestto[bj]))
                    {
                        bestto[bj] = k;
                    }
                }
            }
            self.bestedge[bv] = NONE;
        }
        let list: Vec<usize> = bestto.into_iter().filter(|&k| k != NONE).collect();
        self.bestedge[b] = NONE;
        for &k in &list {
            if self.bestedge[b] == NONE || self.slack(k) < self.slack(self.bestedge[b]) {
                self.bestedge[b] = k;
            }
        }
        self.bestedges[b] = Some(list);
    }

    fn expand_blossom(&mut self, b: usize, endstage: bool) {
        for s in self.childs[b].clone() {
            self.parent[s] = NONE;
            if s < self.n {
                self.inblossom[s] = s;
            } else if endstage && self.dual[s] == 0 {
                self.expand_blossom(s, endstage);
            } else {
                for v in self.leaves_of(s) {
                    self.inblossom[v] = s;
                }
            }
        }
        if !endstage && self.label[b] == 2 {
            self.relabel_expanded(b);
        }
        self.label[b] = 0;
        self.labelend[b] = NONE;
        self.childs[b] = Vec::new();
        self.endps[b] = Vec::new();
        self.base[b] = NONE;
        self.bestedges[b] = None;
        self.bestedge[b] = NONE;
        self.unused.push(b);
    }

    /// Relabels the sub-blossoms of an expanded T-blossom along its alternating path.
    fn relabel_expanded(&mut self, b: usize) {
        let childs = self.childs[b].clone();
        let endps = self.endps[b].clone();
        let len = childs.len() as isize;
        let at = |j: isize| ((j % len + len) % len) as usize;
        let entry = self.inblossom[self.endpoint[self.labelend[b] ^ 1]];
        let mut j = childs
            .iter()
            .position(|&c| c == entry)
            .expect("entry child") as isize;
        let (jstep, trick): (isize, usize) = if j & 1 == 1 {
            j -= len;
            (1, 0)
        } else {
            (-1, 1)
        };
        let mut p = self.labelend[b];
        while j != 0 {
            self.label[self.endpoint[p ^ 1]] = 0;
            let q = endps[at(j - trick as isize)];
            self.label[self.endpoint[q ^ trick ^ 1]] = 0;
            self.assign_label(self.endpoint[p ^ 1], 2, p);
            self.allow[q / 2] = true;
            j += jstep;
            p = endps[at(j - trick as isize)] ^ trick;
            self.allow[p / 2] = true;
            j += jstep;
        }
        let bv = childs[at(j)];
        let e = self.endpoint[p ^ 1];
        self.label[e] = 2;
        self.label[bv] = 2;
        self.labelend[e] = p;
        self.labelend[bv] = p;
        self.bestedge[bv] = NONE;
        j += jstep;
        while childs[at(j)] != entry {
            let bv = childs[at(j)];
            if self.label[bv] == 1 {
                j += jstep;
                continue;
            }
            let reached = self.leaves_of(bv).into_iter().find(|&v| self.label[v] != 0);
            if let Some(v) = reached {
                self.label[v] = 0;
                let m = self.mate[self.base[bv]];
                self.label[self.endpoint[m]] = 0;
                self.assign_label(v, 2, self.labelend[v]);
            }
            j += jstep;
        }
    }

    fn augment_blossom(&mut self, b: usize, v: usize) {
        let mut t = v;
        while self.parent[t] != b {
            t = self.parent[t];
        }
        if t >= self.n {
            self.augment_blossom(t, v);
        }
        let len = self.childs[b].len() as isize;
        let at = |j: isize| ((j % len + len) % len) as usize;
        let i = self.childs[b].iter().position(|&c| c == t).expect("child");
        let mut j = i as isize;
        let (jstep, trick): (isize, usize) = if i & 1 == 1 {
            j -= len;
            (1, 0)
        } else {
            (-1, 1)
        };
        while j != 0 {
            j += jstep;
            let t = self.childs[b][at(j)];
            let p = self.endps[b][at(j - trick as isize)] ^ trick;
            if t >= self.n {
                self.augment_blossom(t, self.endpoint[p]);
            }
            j += jstep;
            let t = self.childs[b][at(j)];
            if t >= self.n {
                self.augment_blossom(t, self.endpoint[p ^ 1]);
            }
            self.mate[self.endpoint[p]] = p ^ 1;
            self.mate[self.endpoint[p ^ 1]] = p;
        }
        self.childs[b].rotate_left(i);
        self.endps[b].rotate_left(i);
        self.base[b] = self.base[self.childs[b][0]];
    }

    fn augment_matching(&mut self, k: usize) {
        let (v, w, _) = self.edges[k];
        for (mut s, mut p) in [(v, 2 * k + 1), (w, 2 * k)] {
            loop {
                let bs = self.inblossom[s];
                if bs >= self.n {
                    self.augment_blossom(bs, s);
                }
                self.mate[s] = p;
                if self.labelend[bs] == NONE {
                    break;
                }
                let t = self.endpoint[self.labelend[bs]];
                let bt = self.inblossom[t];
                s = self.endpoint[self.labelend[bt]];
                let j = self.endpoint[self.labelend[bt] ^ 1];
                if bt >= self.n {
                    self.augment_blossom(bt, j);
                }
                self.mate[j] = self.labelend[bt];
                p = self.labelend[bt] ^ 1;
            }
        }
    }

    pub(super) fn run(&mut self) {
        for _ in 0..self.n {
            if !self.stage() {
                break;
            }
            for b in self.n..2 * self.n {
                if self.parent[b] == NONE
                    && self.base[b] != NONE
                    && self.label[b] == 1
                    && self.dual[b] == 0
                {
                    self.expand_blossom(b, true);
                }
            }
        }
    }

    pub(super) fn mates(&self) -> Vec<usize> {
        (0..self.n)
            .map(|v| match self.mate[v] {
                NONE => NONE,
                p => self.endpoint[p],
            })
            .collect()
    }

    /// Edges (i < j) of the complete graph `w` with negative slack under the current
    /// vertex and blossom duals: where the duals fail to certify optimality.
    pub(super) fn violations(&self, w: &[i64]) -> Vec<(usize, usize)> {
        let n = self.n;
        let chains: Vec<Vec<usize>> = (0..n)
            .map(|v| {
                let mut c = Vec::new();
                let mut b = self.parent[v];
                while b != NONE {
                    c.push(b);
                    b = self.parent[b];
                }
                c.reverse();
                c
            })
            .collect();
        let mut out = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                let mut s = self.dual[i] + self.dual[j] - 2 * w[i * n + j];
                for (a, b) in chains[i].iter().zip(&chains[j]) {
                    if a != b {
                        break;
                    }
                    s += 2 * self.dual[*a];
                }
                if s < 0 {
                    out.push((i, j));
                }
            }
        }
        out
    }

    /// One stage: grows alternating trees until it augments; false if no augmenting path.
    fn stage(&mut self) -> bool {
        let n = self.n;
        self.label.fill(0);
        self.bestedge.fill(NONE);
        for b in n..2 * n {
            self.bestedges[b] = None;
        }
        self.allow.fill(false);
        self.queue.clear();
        for v in 0..n {
            if self.mate[v] == NONE && self.label[self.inblossom[v]] == 0 {
                self.assign_label(v, 1, NONE);
            }
        }
        loop {
            if self.scan_queue() {
                return true;
            }
            if !self.dual_update() {
                return false;
            }
        }
    }

    /// Scans S-vertices from the queue; true once the matching was augmented.
    fn scan_queue(&mut self) -> bool {
        while let Some(v) = self.queue.pop() {
            for idx in 0..self.neighbend[v].len() {
                let p = self.neighbend[v][idx];
                let k = p / 2;
                let w = self.endpoint[p];
                if self.inblossom[v] == self.inblossom[w] {
                    continue;
                }
                let mut kslack = 0;
                if !self.allow[k] {
                    kslack = self.slack(k);
                    if kslack <= 0 {
                        self.allow[k] = true;
                    }
                }
                let bw = self.inblossom[w];
                if self.allow[k] {
                    if self.label[bw] == 0 {
                        self.assign_label(w, 2, p ^ 1);
                    } else if self.label[bw] == 1 {
                        let base = self.scan_blossom(v, w);
                        if base != NONE {
                            self.add_blossom(base, k);
                        } else {
                            self.augment_matching(k);
                            return true;
                        }
                    } else if self.label[w] == 0 {
                        self.label[w] = 2;
                        self.labelend[w] = p ^ 1;
                    }
                } else if self.label[bw] == 1 {
                    let b = self.inblossom[v];
                    if self.bestedge[b] == NONE || kslack < self.slack(self.bestedge[b]) {
                        self.bestedge[b] = k;
                    }
                } else if self.label[w] == 0
                    && (self.bestedge[w] == NONE || kslack < self.slack(self.bestedge[w]))
                {
                    self.bestedge[w] = k;
                }
            }
        }
        false
    }

    /// Changes the duals by the largest safe delta; false when no progress is possible.
    fn dual_update(&mut self) -> bool {
        let n = self.n;
        // (type, delta, edge or blossom)
        let mut best: Option<(u8, i64, usize)> = None;
        let consider = |t: u8, d: i64, x: usize, best: &mut Option<(u8, i64, usize)>| {
            if best.is_none_or(|(_, bd, _)| d < bd) {
                *best = Some((t, d, x));
            }
        };
        for v in 0..n {
            if self.label[self.inblossom[v]] == 0 && self.bestedge[v] != NONE {
                consider(2, self.slack(self.bestedge[v]), self.bestedge[v], &mut best);
            }
        }
        for b in 0..2 * n {
            if self.parent[b] == NONE && self.label[b] == 1 && self.bestedge[b] != NONE {
                consider(
                    3,
                    self.slack(self.bestedge[b]) / 2,
                    self.bestedge[b],
                    &mut best,
                );
            }
        }
        for b in n..2 * n {
            if self.base[b] != NONE && self.parent[b] == NONE && self.label[b] == 2 {
                consider(4, self.dual[b], b, &mut best);
            }
        }
        let Some((t, delta, x)) = best else {
            return false;
        };
        for v in 0..n {
            match self.label[self.inblossom[v]] {
                1 => self.dual[v] -= delta,
                2 => self.dual[v] += delta,
                _ => {}
            }
        }
        for b in n..2 * n {
            if self.base[b] != NONE && self.parent[b] == NONE {
                match self.label[b] {
                    1 => self.dual[b] += delta,
                    2 => self.dual[b] -= delta,
                    _ => {}
                }
            }
        }
        match t {
            2 | 3 => {
                self.allow[x] = true;
                let (mut i, j, _) = self.edges[x];
                if self.label[self.inblossom[i]] == 0 {
                    i = j;
                }
                self.queue.push(i);
            }
            _ => self.expand_blossom(x, false),
        }
        true
    }
}
