/**
 * Latent semantic indexing for a benchmark (bench/cluster_cv.ts): a truncated SVD of a
 * collection's document-term matrix (log tf x idf, rows normalised) by randomized range finding
 * with power iterations (Halko, Martinsson & Tropp 2011), documents as `X V` (rows normalised)
 * and queries folded in as `q V`. Dense `n x l` work arrays: meant for collections of a few
 * thousand documents, not for the service.
 */
import { prng } from "../fixtures/prng.ts";

/** A fitted LSI space. */
export interface Lsi {
  k: number;
  /** Term -> column. */
  columns: Map<string, number>;
  idf: Float64Array;
  /** Term loadings, `terms x k` row-major. */
  v: Float64Array;
  /** Normalised document vectors, `docs x k` row-major. */
  docs: Float32Array;
}

interface Csr {
  rows: number;
  cols: number;
  start: Int32Array;
  col: Int32Array;
  val: Float64Array;
}

// Unit-length rows of log tf x idf weights.
function weigh(bag: Map<string, number>, columns: Map<string, number>, idf: Float64Array): [number, number][] {
  const out: [number, number][] = [];
  let norm = 0;
  for (const [t, tf] of bag) {
    const c = columns.get(t);
    if (c === undefined || tf <= 0) continue;
    const w = (1 + Math.log(tf)) * idf[c]!;
    out.push([c, w]);
    norm += w * w;
  }
  norm = Math.sqrt(norm) || 1;
  return out.map(([c, w]) => [c, w / norm]);
}

// Orthonormal columns (modified Gram-Schmidt) of a `rows x l` column-major matrix, in place.
function orthonormalise(a: Float64Array, rows: number, l: number): void {
  for (let j = 0; j < l; j++) {
    const cj = j * rows;
    for (let i = 0; i < j; i++) {
      const ci = i * rows;
      let dot = 0;
      for (let r = 0; r < rows; r++) dot += a[ci + r]! * a[cj + r]!;
      for (let r = 0; r < rows; r++) a[cj + r]! -= dot * a[ci + r]!;
    }
    let norm = 0;
    for (let r = 0; r < rows; r++) norm += a[cj + r]! * a[cj + r]!;
    norm = Math.sqrt(norm) || 1;
    for (let r = 0; r < rows; r++) a[cj + r]! /= norm;
  }
}

// Y (rows x l, column-major) = X (CSR) times B (cols x l, column-major).
function times(x: Csr, b: Float64Array, l: number): Float64Array {
  const y = new Float64Array(x.rows * l);
  for (let r = 0; r < x.rows; r++) {
    for (let p = x.start[r]!; p < x.start[r + 1]!; p++) {
      const c = x.col[p]!, v = x.val[p]!;
      for (let j = 0; j < l; j++) y[j * x.rows + r]! += v * b[j * x.cols + c]!;
    }
  }
  return y;
}

// Z (cols x l, column-major) = X^T times Y (rows x l, column-major).
function timesTransposed(x: Csr, y: Float64Array, l: number): Float64Array {
  const z = new Float64Array(x.cols * l);
  for (let r = 0; r < x.rows; r++) {
    for (let p = x.start[r]!; p < x.start[r + 1]!; p++) {
      const c = x.col[p]!, v = x.val[p]!;
      for (let j = 0; j < l; j++) z[j * x.cols + c]! += v * y[j * x.rows + r]!;
    }
  }
  return z;
}

// Eigen decomposition of a symmetric `l x l` matrix (cyclic Jacobi): eigenvalues and
// eigenvectors (columns of `w`, row-major l x l).
function symmetricEigen(a: Float64Array, l: number): { values: Float64Array; w: Float64Array } {
  const w = new Float64Array(l * l);
  for (let i = 0; i < l; i++) w[i * l + i] = 1;
  for (let sweep = 0; sweep < 30; sweep++) {
    let off = 0;
    for (let p = 0; p < l; p++) for (let q = p + 1; q < l; q++) off += a[p * l + q]! ** 2;
    if (off < 1e-18) break;
    for (let p = 0; p < l; p++) {
      for (let q = p + 1; q < l; q++) {
        const apq = a[p * l + q]!;
        if (Math.abs(apq) < 1e-15) continue;
        const theta = (a[q * l + q]! - a[p * l + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1), s = t * c;
        for (let k = 0; k < l; k++) {
          const akp = a[k * l + p]!, akq = a[k * l + q]!;
          a[k * l + p] = c * akp - s * akq;
          a[k * l + q] = s * akp + c * akq;
        }
        for (let k = 0; k < l; k++) {
          const apk = a[p * l + k]!, aqk = a[q * l + k]!;
          a[p * l + k] = c * apk - s * aqk;
          a[q * l + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < l; k++) {
          const wkp = w[k * l + p]!, wkq = w[k * l + q]!;
          w[k * l + p] = c * wkp - s * wkq;
          w[k * l + q] = s * wkp + c * wkq;
        }
      }
    }
  }
  return { values: Float64Array.from({ length: l }, (_, i) => a[i * l + i]!), w };
}

/**
 * Fits an LSI space of `k` dimensions to documents' term bags.
 * @param df each term's document frequency, for idf
 */
export function buildLsi(bags: Map<string, number>[], k: number, { oversample = 10, powerIterations = 2 } = {}): Lsi {
  const columns = new Map<string, number>();
  const df: number[] = [];
  for (const bag of bags) {
    for (const t of bag.keys()) {
      let c = columns.get(t);
      if (c === undefined) columns.set(t, c = df.length), df.push(0);
      df[c]!++;
    }
  }
  const n = bags.length, terms = df.length;
  const idf = Float64Array.from(df, (d) => Math.log(1 + (n - d + 0.5) / (d + 0.5)));
  const rows = bags.map((b) => weigh(b, columns, idf));
  const start = new Int32Array(n + 1);
  rows.forEach((r, i) => (start[i + 1] = start[i]! + r.length));
  const col = new Int32Array(start[n]!), val = new Float64Array(start[n]!);
  rows.forEach((r, i) => r.forEach(([c, w], j) => (col[start[i]! + j] = c, val[start[i]! + j] = w)));
  const x: Csr = { rows: n, cols: terms, start, col, val };

  const l = Math.min(k + oversample, n, terms);
  const rand = prng(7);
  // Gaussian test matrix (Box-Muller).
  const omega = Float64Array.from(
    { length: terms * l },
    () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand()),
  );
  let y = times(x, omega, l);
  for (let it = 0; it < powerIterations; it++) {
    orthonormalise(y, n, l);
    const z = timesTransposed(x, y, l);
    orthonormalise(z, terms, l);
    y = times(x, z, l);
  }
  orthonormalise(y, n, l);
  // B^T = X^T Q (terms x l); C = B B^T = (X^T Q)^T (X^T Q).
  const bt = timesTransposed(x, y, l);
  const c = new Float64Array(l * l);
  for (let i = 0; i < l; i++) {
    for (let j = i; j < l; j++) {
      let s = 0;
      for (let t = 0; t < terms; t++) s += bt[i * terms + t]! * bt[j * terms + t]!;
      c[i * l + j] = c[j * l + i] = s;
    }
  }
  const { values, w } = symmetricEigen(c, l);
  const order = Array.from({ length: l }, (_, i) => i).sort((a, b) => values[b]! - values[a]!).slice(0, k);
  const kk = order.length;
  // V = B^T W Sigma^-1 (terms x k).
  const v = new Float64Array(terms * kk);
  order.forEach((e, j) => {
    const sigma = Math.sqrt(Math.max(values[e]!, 1e-12));
    for (let t = 0; t < terms; t++) {
      let s = 0;
      for (let i = 0; i < l; i++) s += bt[i * terms + t]! * w[i * l + e]!;
      v[t * kk + j] = s / sigma;
    }
  });
  const docs = new Float32Array(n * kk);
  rows.forEach((r, i) => docs.set(project(r, v, kk), i * kk));
  return { k: kk, columns, idf, v, docs };
}

function project(row: [number, number][], v: Float64Array, k: number): Float32Array {
  const out = new Float32Array(k);
  for (const [c, w] of row) for (let j = 0; j < k; j++) out[j]! += w * v[c * k + j]!;
  let norm = 0;
  for (let j = 0; j < k; j++) norm += out[j]! * out[j]!;
  norm = Math.sqrt(norm);
  if (norm > 0) { for (let j = 0; j < k; j++) out[j]! /= norm; }
  return out;
}

/** A query's normalised LSI vector (zeros when it has no known term). */
export function foldIn(lsi: Lsi, bag: Map<string, number>): Float32Array {
  return project(weigh(bag, lsi.columns, lsi.idf), lsi.v, lsi.k);
}

/** Cosine of a folded-in query with document `i`. */
export function lsiCosine(lsi: Lsi, query: Float32Array, i: number): number {
  let s = 0;
  for (let j = 0, o = i * lsi.k; j < lsi.k; j++) s += query[j]! * lsi.docs[o + j]!;
  return s;
}
