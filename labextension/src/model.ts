/**
 * The program model and its delta, as `fluid_nb.viz.program_model` / `program_delta` write
 * them (MIME type `application/vnd.fluid-nb.program+json`). Fields the front end does not
 * read are kept as they come.
 */

/** MIME type of a program model (and of its deltas). */
export const PROGRAM_MIME = 'application/vnd.fluid-nb.program+json';

/** One block: `b<idx>`, nested in `parent`, owned by the op `owner` (null for block 0). */
export interface IBlock {
  id: string;
  idx: number;
  parent: string | null;
  owner: string | null;
  label: string;
}

/** Slot name to variable names. */
export type Slots = { [slot: string]: string[] };

/** One op node. `kernel` and `last_run_ms` appear when the executor recorded them. */
export interface IOp {
  id: string;
  block: string;
  index: number;
  type: string;
  role: string;
  inputs: Slots;
  outputs: Slots;
  attrs: { [name: string]: unknown };
  sub_blocks: string[];
  pair: string | null;
  new: boolean;
  source: string | null;
  dot: string;
  /** The statement with the op's parameters drawn inside its box (when it has any). */
  dot_inline?: string;
  kernel?: string | null;
  last_run_ms?: number | null;
  [extra: string]: unknown;
}

/** One variable node: id `v:<block idx>:<name>`. */
export interface IVar {
  id: string;
  block: string;
  name: string;
  type: string;
  dtype: string | null;
  shape: number[] | null;
  lod_level: number | null;
  persistable: boolean;
  parameter: boolean;
  stop_gradient: boolean;
  new: boolean;
  /** Drawn inside the ops that use it unless parameters are shown as nodes. */
  inline?: boolean;
  dot: string;
  [extra: string]: unknown;
}

/** One data edge between an op and a variable (either direction). */
export interface IEdge {
  id: string;
  src: string;
  dst: string;
  slot: string;
  dot: string;
  /** Drawn as a row inside its op's box (not as an edge) unless parameters are nodes. */
  inline?: boolean;
}

/** What one op allocated in a recorded run (`fluid_nb.viz.program_model.program_memory`). */
export interface IOpMemory {
  /** `mul #2`, `relu #0 (block 1)`. */
  label: string;
  /** Bytes of the blocks it allocated, and the bytes asked for. */
  bytes: number;
  requested: number;
  blocks: number;
  /** The variables its blocks hold (the first few), and how many there were. */
  vars: string[];
  vars_count: number;
  /** Blocks no variable kept (a kernel's temporaries). */
  unnamed: number;
}

/** Bytes, bytes asked and blocks of allocations outside the model's ops. */
export interface IMemoryTotals {
  bytes: number;
  requested: number;
  blocks: number;
}

/** The memory figures of a recorded run, per op id (only ops that allocated something). */
export interface IMemoryFigures {
  format: 'fluid-nb.op-memory';
  version: number;
  events: number;
  ops: { [opId: string]: IOpMemory };
  min: number;
  max: number;
  total: number;
  blocks: number;
  outside: IMemoryTotals;
  unmatched: IMemoryTotals;
}

/** True when `data` looks like memory figures. */
export function isMemoryFigures(data: unknown): data is IMemoryFigures {
  const m = data as IMemoryFigures;
  return !!m && m.format === 'fluid-nb.op-memory' && typeof m.ops === 'object' && m.ops !== null;
}

/** The whole program model. */
export interface IProgramModel {
  format: 'fluid-nb.program';
  version: number;
  revision: number;
  title: string;
  blocks: IBlock[];
  ops: IOp[];
  vars: IVar[];
  edges: IEdge[];
  dot_header: string;
  stats: { blocks: number; ops: number; vars: number };
  /** Bytes allocated per op in a recorded run, when a view attached them. */
  memory?: IMemoryFigures | null;
  [extra: string]: unknown;
}

/** Elements by kind, as a delta adds them. */
export interface IElements {
  blocks?: IBlock[];
  ops?: IOp[];
  vars?: IVar[];
  edges?: IEdge[];
}

/** Ids by kind, as a delta removes them. */
export interface IElementIds {
  blocks?: string[];
  ops?: string[];
  vars?: string[];
  edges?: string[];
}

/** The ops' groups that changed: the top's ids whole, the groups gone or changed, the
 * groups new or changed (whole; see `fluid_nb.viz.delta`). */
export interface IGroupsDelta {
  root: string[];
  remove: string[];
  add: unknown[];
}

/** What changed from model revision `base` to `revision`. */
export interface IProgramDelta {
  format: 'fluid-nb.program-delta';
  version: number;
  base: number;
  revision: number;
  add: IElements;
  remove: IElementIds;
  update: { ops?: IOp[]; vars?: IVar[] };
  groups?: IGroupsDelta;
  [extra: string]: unknown;
}

/** True when `data` looks like a program model (what the renderer accepts). */
export function isProgramModel(data: unknown): data is IProgramModel {
  const m = data as IProgramModel;
  return (
    !!m &&
    m.format === 'fluid-nb.program' &&
    Array.isArray(m.blocks) &&
    Array.isArray(m.ops) &&
    Array.isArray(m.vars) &&
    Array.isArray(m.edges) &&
    typeof m.dot_header === 'string'
  );
}

/** True when `data` is a program delta. */
export function isProgramDelta(data: unknown): data is IProgramDelta {
  const d = data as IProgramDelta;
  return !!d && d.format === 'fluid-nb.program-delta' && typeof d.base === 'number';
}
