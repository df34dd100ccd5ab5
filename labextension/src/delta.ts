/**
 * Applying a delta to a model: the TypeScript twin of `fluid_nb.viz.apply_delta`.
 */
import { IGroup, IHierarchy } from './hierarchy';
import { IEdge, IGroupsDelta, IProgramDelta, IProgramModel } from './model';

/** Raised when a delta does not start from the model's revision (the caller then needs the
 * full model again). */
export class DeltaMismatch extends Error {}

type Keyed = { id: string };

function merge<T extends Keyed>(
  items: T[],
  remove: string[] | undefined,
  update: T[] | undefined,
  add: T[] | undefined
): T[] {
  const gone = new Set(remove ?? []);
  const changed = new Map((update ?? []).map(u => [u.id, u] as [string, T]));
  const kept = items.filter(it => !gone.has(it.id)).map(it => changed.get(it.id) ?? it);
  return kept.concat(add ?? []);
}

function blockIdx(blockId: string): number {
  return Number(blockId.slice(1));
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The groups after a delta's `groups`, in the pre-order the Python side lists them in
 * (each group, then the groups among its children). */
function applyGroups(hierarchy: IHierarchy | undefined, change: IGroupsDelta): IHierarchy {
  const gone = new Set(change.remove);
  const groups = new Map<string, IGroup>();
  for (const group of hierarchy?.groups ?? []) {
    if (!gone.has(group.id)) {
      groups.set(group.id, group);
    }
  }
  for (const group of change.add as IGroup[]) {
    groups.set(group.id, group);
  }
  const ordered: IGroup[] = [];
  const visit = (ids: string[]): void => {
    for (const id of ids) {
      const group = groups.get(id);
      if (group) {
        ordered.push(group);
        visit(group.children);
      }
    }
  };
  visit(change.root);
  return { root: [...change.root], groups: ordered };
}

/**
 * The model after `delta`. Invariants: the result's `revision` is `delta.revision`; only the
 * ops in `delta.add.ops` (and the variables in `delta.add.vars`) have `new: true`, so a delta
 * highlights what the last cell added; elements are in the canonical order of
 * `fluid_nb.viz.program_model` (blocks by index; ops by block index and position; variables
 * by block index and name; edges by their op's position, inputs first, then slot and
 * variable), so the result equals a full model of the grown program up to the `new` flags.
 */
export function applyDelta(model: IProgramModel, delta: IProgramDelta): IProgramModel {
  if (delta.base !== model.revision) {
    throw new DeltaMismatch(
      `program delta: base revision expected ${model.revision}, but received ${delta.base}`
    );
  }
  const addedOps = new Set((delta.add.ops ?? []).map(op => op.id));
  const addedVars = new Set((delta.add.vars ?? []).map(v => v.id));
  const blocks = merge(model.blocks, delta.remove.blocks, undefined, delta.add.blocks).sort(
    (a, b) => a.idx - b.idx
  );
  const ops = merge(model.ops, delta.remove.ops, delta.update.ops, delta.add.ops)
    .map(op => (op.new === addedOps.has(op.id) ? op : { ...op, new: addedOps.has(op.id) }))
    .sort((a, b) => blockIdx(a.block) - blockIdx(b.block) || a.index - b.index);
  const vars = merge(model.vars, delta.remove.vars, delta.update.vars, delta.add.vars)
    .map(v => (v.new === addedVars.has(v.id) ? v : { ...v, new: addedVars.has(v.id) }))
    .sort((a, b) => blockIdx(a.block) - blockIdx(b.block) || compareText(a.name, b.name));
  const position = new Map(ops.map(op => [op.id, [blockIdx(op.block), op.index]]));
  const edgeKey = (e: IEdge): [number, number, number, string, string] => {
    const dst = position.get(e.dst);
    if (dst) {
      return [dst[0], dst[1], 0, e.slot, e.src];
    }
    const src = position.get(e.src) ?? [1 << 30, 0];
    return [src[0], src[1], 1, e.slot, e.dst];
  };
  const edges = merge(model.edges, delta.remove.edges, undefined, delta.add.edges)
    .map(e => ({ e, key: edgeKey(e) }))
    .sort(
      (a, b) =>
        a.key[0] - b.key[0] ||
        a.key[1] - b.key[1] ||
        a.key[2] - b.key[2] ||
        compareText(a.key[3], b.key[3]) ||
        compareText(a.key[4], b.key[4])
    )
    .map(x => x.e);
  return {
    ...model,
    revision: delta.revision,
    title: typeof delta.title === 'string' ? delta.title : model.title,
    blocks,
    ops,
    vars,
    edges,
    // only the groups that changed come (on the path from the top to the added ops)
    hierarchy:
      delta.groups !== undefined
        ? applyGroups(model.hierarchy as IHierarchy | undefined, delta.groups)
        : model.hierarchy,
    stats: { blocks: blocks.length, ops: ops.length, vars: vars.length }
  };
}
