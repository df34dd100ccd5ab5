/**
 * The folded drawing of a large program: its ops as the nested groups of the model's
 * `hierarchy` (`fluid_nb.viz.groups`), each group either a box (folded) or a cluster of
 * what it holds (open).
 *
 * Why: one Graphviz layout of every op of a 600-op training program is seconds of work and
 * a drawing whose labels are a few pixels tall. Folded, the drawing holds a few dozen boxes
 * whatever the program's size, so it is laid out in tens of milliseconds and read at full
 * size; opening a group adds at most its children (the Python side bounds them).
 *
 * What is drawn, for a set of open groups:
 * - every op whose groups are all open is drawn as itself (with its sub-blocks beside it);
 *   any other op is represented by its outermost folded group, drawn once as a box;
 * - a variable is a node when an op drawn as itself writes or reads it (along a drawn edge),
 *   placed in the cluster of its first such writer (else reader);
 * - a variable between folded groups only is an edge from the group writing it to each
 *   group reading it (one edge per pair of boxes);
 * - `hiddenRoles` and `paramsAsNodes` choose as in `visibleStatements`; a group whose ops
 *   are all hidden is not drawn.
 */
import { IViewOptions, ownerTies, quote, visibleStatements } from './dot';
import { IBlock, IEdge, IProgramModel } from './model';

/** One group of ops (`fluid_nb.viz.groups.program_hierarchy`). */
export interface IGroup {
  id: string;
  parent: string | null;
  label: string;
  /** `section`, `call`, `scope`, `inferred`, `series`, `part`. */
  kind: string;
  /** Op ids and group ids, in order. */
  children: string[];
  /** Ops inside, at any depth. */
  ops: number;
  role: string | null;
  /** `file:line` of the call that made it, when known. */
  source: string | null;
  /** For a series: how many runs of equal structure it folds. */
  repeat?: number;
}

/** The groups of block 0's ops. */
export interface IHierarchy {
  root: string[];
  groups: IGroup[];
}

/** Boxes drawn at first sight, at most (a drawing this size reads at full size). */
export const FIRST_SIGHT_UNITS = 28;
/** A first sight of fewer boxes than this opens series too. */
const SPARSE_UNITS = 8;
/** Programs with more ops than this (in shown blocks) are drawn folded. */
export const FOLD_THRESHOLD = 60;

/**
 * Fewer crossing-minimisation and positioning passes: a folded drawing of 40 boxes in
 * nested clusters is laid out in about 25 ms instead of 110 (Node, one core), and a first
 * sight must come within a second of opening the page.
 */
export const FOLDED_GRAPH_ATTRS = 'graph [mclimit=0.2, nslimit=0.5, nslimit1=0.5];';

const ROLE_FILL: { [role: string]: string } = {
  forward: '#dbeafe',
  backward: '#fee2e2',
  optimize: '#dcfce7',
  lr_sched: '#ede9fe'
};

/** Lookups over one model's hierarchy. */
export class Hierarchy {
  readonly groups = new Map<string, IGroup>();
  /** Group id or block-0 op id to the group holding it (null at the top). */
  readonly parentOf = new Map<string, string | null>();
  readonly root: string[];
  private readonly opsCache = new Map<string, string[]>();

  constructor(readonly model: IProgramModel) {
    const hierarchy = model.hierarchy as IHierarchy | undefined;
    this.root = hierarchy?.root ?? [];
    for (const group of hierarchy?.groups ?? []) {
      this.groups.set(group.id, group);
    }
    for (const id of this.root) {
      this.parentOf.set(id, null);
    }
    for (const group of this.groups.values()) {
      for (const child of group.children) {
        this.parentOf.set(child, group.id);
      }
    }
  }

  /** Whether the model has groups to fold. */
  get usable(): boolean {
    return this.groups.size > 0;
  }

  /** The groups holding `id` (a group or a block-0 op), outermost first. */
  ancestors(id: string): string[] {
    const path: string[] = [];
    for (let p = this.parentOf.get(id) ?? null; p !== null; p = this.parentOf.get(p) ?? null) {
      path.push(p);
    }
    return path.reverse();
  }

  /** Every op id inside a group, at any depth, in order. */
  opsOf(groupId: string): string[] {
    let ops = this.opsCache.get(groupId);
    if (!ops) {
      ops = [];
      for (const child of this.groups.get(groupId)?.children ?? []) {
        if (this.groups.has(child)) {
          ops.push(...this.opsOf(child));
        } else {
          ops.push(child);
        }
      }
      this.opsCache.set(groupId, ops);
    }
    return ops;
  }
}

/** The block-0 op an op of any block stands under (itself, or the op owning its block). */
export function rootOpOf(model: IProgramModel): Map<string, string> {
  const blocks = new Map(model.blocks.map(b => [b.id, b] as [string, IBlock]));
  const opBlock = new Map(model.ops.map(op => [op.id, op.block]));
  const root = model.blocks.find(b => b.parent === null)?.id;
  const result = new Map<string, string>();
  for (const op of model.ops) {
    let id = op.id;
    let block = op.block;
    for (let guard = 0; block !== root && guard < 64; guard++) {
      const owner = blocks.get(block)?.owner;
      if (!owner) {
        break;
      }
      id = owner;
      block = opBlock.get(owner) ?? root ?? '';
    }
    result.set(op.id, id);
  }
  return result;
}

/**
 * The groups open at first sight: breadth first from the top, each opened when what it
 * adds keeps the drawing within `budget` units (a box is one unit; an op drawn as itself
 * two, for the value node it usually brings). Series stay folded (their "×9" is the point);
 * a group whose ops are all hidden is not counted.
 */
export function firstSightOpen(
  hierarchy: Hierarchy,
  visibleOps: Set<string>,
  budget = FIRST_SIGHT_UNITS
): Set<string> {
  const open = new Set<string>();
  const shown = (id: string) =>
    hierarchy.groups.has(id)
      ? hierarchy.opsOf(id).some(op => visibleOps.has(op))
      : visibleOps.has(id);
  const cost = (id: string) => (hierarchy.groups.has(id) ? 1 : 2);
  const tops = hierarchy.root.filter(shown);
  let units = tops.reduce((sum, id) => sum + cost(id), 0);
  // first the structure (groups holding groups: a model's stages, a section's layers),
  // then, while the budget lasts, the groups of ops themselves; series too only when the
  // drawing would otherwise be nearly empty (a chain of one op repeated: "scale ×1000")
  for (const pass of ['structure', 'groups', 'series']) {
    if (pass === 'series' && units >= SPARSE_UNITS) {
      break;
    }
    const structureOnly = pass === 'structure';
    const queue = tops.filter(id => hierarchy.groups.has(id));
    while (queue.length) {
      const id = queue.shift()!;
      const group = hierarchy.groups.get(id)!;
      const children = group.children.filter(shown);
      const inner = children.filter(c => hierarchy.groups.has(c));
      if (open.has(id)) {
        queue.push(...inner);
        continue;
      }
      if ((group.kind === 'series' && pass !== 'series') || (structureOnly && !inner.length)) {
        continue;
      }
      const added = children.reduce((sum, c) => sum + cost(c), 0) - 1;
      if (units + added > budget) {
        continue;
      }
      units += added;
      open.add(id);
      queue.push(...inner);
    }
  }
  return open;
}

/** What `foldedDot` drew: its DOT text and, per model element, the node standing for it. */
export interface IFoldedDrawing {
  dot: string;
  /** Op id (any block) to the id of the node drawn for it: itself or a folded group. */
  drawnAs: Map<string, string>;
  /** Group ids drawn as boxes. */
  boxes: Set<string>;
}

function groupStatement(group: IGroup, role: string | null): string {
  const fill = ROLE_FILL[role ?? 'forward'] ?? '#e5e7eb';
  const count = `${group.ops} op${group.ops === 1 ? '' : 's'}`;
  const series = group.kind === 'series';
  const tooltip =
    `${group.label}: ${count}` + (group.source ? ` (called at ${group.source})` : '') +
    ' · click to open';
  return (
    `${quote(group.id)} [id=${quote(group.id)}, class="group kind-${group.kind} ` +
    `role-${role ?? 'forward'}", label=${quote(group.label + '\n' + count)}, ` +
    `shape=${series ? 'box3d' : 'box'}, style="filled,rounded${series ? ',bold' : ''}", ` +
    `fillcolor="${fill}", penwidth=1.4, tooltip=${quote(tooltip)}];`
  );
}

/**
 * The DOT text of `model` with the groups in `open` open and every other group folded
 * (see the module comment). `collapsedBlocks` are sub-blocks drawn folded into their op.
 */
export function foldedDot(
  model: IProgramModel,
  hierarchy: Hierarchy,
  open: Set<string>,
  collapsedBlocks: Set<string> = new Set(),
  options: IViewOptions = {}
): IFoldedDrawing {
  const statements = visibleStatements(model, options);
  const rootOp = rootOpOf(model);
  const rootBlock = model.blocks.find(b => b.parent === null)?.id;
  const drawnAs = new Map<string, string>();
  const boxes = new Set<string>();
  const blocks = new Map(model.blocks.map(b => [b.id, b] as [string, IBlock]));
  const hiddenBlock = (blockId: string): boolean => {
    for (let b = blocks.get(blockId); b && b.parent !== null; b = blocks.get(b.parent)) {
      if (collapsedBlocks.has(b.id)) {
        return true;
      }
    }
    return false;
  };
  // what each op is drawn as: its outermost folded group, else itself
  const visibleOps = new Set(model.ops.filter(op => statements.has(op.id)).map(op => op.id));
  const foldedUnder = new Map<string, string | null>();
  for (const op of model.ops) {
    const top = rootOp.get(op.id) ?? op.id;
    let folded = foldedUnder.get(top);
    if (folded === undefined) {
      folded = hierarchy.ancestors(top).find(g => !open.has(g)) ?? null;
      foldedUnder.set(top, folded);
    }
    if (!visibleOps.has(op.id)) {
      continue;
    }
    if (folded !== null) {
      drawnAs.set(op.id, folded);
    } else if (top === op.id || (drawnAs.get(top) === top && !hiddenBlock(op.block))) {
      drawnAs.set(op.id, op.id);
    } else if (drawnAs.has(top)) {
      drawnAs.set(op.id, drawnAs.get(top)!);
    }
  }
  drawnAs.forEach((as, op) => {
    if (as !== op) {
      boxes.add(as);
    }
  });

  // variables: drawn when an op drawn as itself uses them along a drawn edge, beside its
  // first such writer (else reader) when both are in one block
  const asNodes = !!options.paramsAsNodes;
  const varBlock = new Map(model.vars.map(v => [v.id, v.block] as [string, string]));
  const varName = new Map(model.vars.map(v => [v.id, v.name] as [string, string]));
  const opBlock = new Map(model.ops.map(op => [op.id, op.block] as [string, string]));
  const home = new Map<string, string>();
  const readHome = new Map<string, string>();
  const writers = new Map<string, Set<string>>();
  const readers = new Map<string, Set<string>>();
  // each drawn edge once: which way it goes, its op and variable, and what the op is drawn as
  const drawnEdges: { edge: IEdge; write: boolean; opId: string; varId: string; as: string }[] =
    [];
  for (const edge of model.edges) {
    if (edge.inline && !asNodes) {
      continue;
    }
    const write = varBlock.has(edge.dst);
    const [opId, varId] = write ? [edge.src, edge.dst] : [edge.dst, edge.src];
    const as = drawnAs.get(opId);
    if (as === undefined || !statements.has(varId)) {
      continue;
    }
    drawnEdges.push({ edge, write, opId, varId, as });
    const ends = write ? writers : readers;
    ends.set(varId, (ends.get(varId) ?? new Set()).add(as));
    if (as === opId) {
      const homes = write ? home : readHome;
      if (!homes.has(varId)) {
        homes.set(varId, opId);
      }
    }
  }
  readHome.forEach((opId, varId) => {
    if (!home.has(varId)) {
      home.set(varId, opId);
    }
  });

  const lines = [model.dot_header, '  ' + FOLDED_GRAPH_ATTRS];
  const shown = new Set<string>();
  const varsBeside = new Map<string, string[]>();
  const blockVars = new Map<string, string[]>();
  home.forEach((opId, varId) => {
    const block = varBlock.get(varId)!;
    if (block === opBlock.get(opId) && block === rootBlock) {
      varsBeside.set(opId, [...(varsBeside.get(opId) ?? []), varId]);
    } else {
      blockVars.set(block, [...(blockVars.get(block) ?? []), varId]);
    }
  });
  const blocksOf = new Map<string, IBlock[]>();
  for (const b of model.blocks) {
    if (b.owner) {
      blocksOf.set(b.owner, [...(blocksOf.get(b.owner) ?? []), b]);
    }
  }
  const opsByBlock = new Map<string, string[]>();
  for (const op of model.ops) {
    if (op.block !== rootBlock && drawnAs.get(op.id) === op.id) {
      opsByBlock.set(op.block, [...(opsByBlock.get(op.block) ?? []), op.id]);
    }
  }
  const emitVar = (varId: string, indent: string) => {
    if (!shown.has(varId)) {
      shown.add(varId);
      lines.push(indent + statements.get(varId)!);
    }
  };
  const emitOp = (opId: string, indent: string) => {
    shown.add(opId);
    lines.push(indent + statements.get(opId)!);
    for (const v of varsBeside.get(opId) ?? []) {
      emitVar(v, indent);
    }
    for (const block of blocksOf.get(opId) ?? []) {
      emitBlock(block, indent);
    }
  };
  const emitBlock = (block: IBlock, indent: string) => {
    const ops = opsByBlock.get(block.id) ?? [];
    if (collapsedBlocks.has(block.id) || !ops.length) {
      return;
    }
    lines.push(`${indent}subgraph ${quote('cluster_' + block.id)} {`);
    lines.push(`${indent}  label=${quote(block.label)};`);
    for (const op of ops) {
      emitOp(op, indent + '  ');
    }
    for (const v of blockVars.get(block.id) ?? []) {
      emitVar(v, indent + '  ');
    }
    lines.push(`${indent}}`);
  };
  const emitChildren = (children: string[], indent: string, role: string | null) => {
    for (const id of children) {
      const group = hierarchy.groups.get(id);
      if (!group) {
        if (drawnAs.get(id) === id) {
          emitOp(id, indent);
        }
        continue;
      }
      const groupRole = group.role ?? role;
      if (boxes.has(id)) {
        shown.add(id);
        lines.push(indent + groupStatement(group, groupRole));
      } else if (open.has(id) && hierarchy.opsOf(id).some(op => drawnAs.has(op))) {
        lines.push(`${indent}subgraph ${quote('cluster_' + id)} {`);
        lines.push(
          `${indent}  id=${quote('cluster_' + id)}; class="group-open kind-${group.kind}"; ` +
            `label=${quote(group.label)}; style="rounded,dashed"; color="#94a3b8";`
        );
        emitChildren(group.children, indent + '  ', groupRole);
        lines.push(`${indent}}`);
      }
    }
  };
  const topOps = hierarchy.root.length
    ? hierarchy.root
    : model.ops.filter(op => op.block === rootBlock).map(op => op.id);
  emitChildren(topOps, '  ', null);
  // block-0 variables beside no drawn op of their block (used by sub-block ops only)
  for (const v of blockVars.get(rootBlock ?? '') ?? []) {
    emitVar(v, '  ');
  }

  const edgeLines = new Set<string>();
  const seen = new Set<string>();
  for (const { edge, write, opId, varId, as } of drawnEdges) {
    if (!shown.has(varId) || !shown.has(as)) {
      continue;
    }
    if (as === opId) {
      edgeLines.add('  ' + edge.dot);
      continue;
    }
    const [src, dst] = write ? [as, varId] : [varId, as];
    const key = `${src}|${dst}`;
    if (!seen.has(key)) {
      seen.add(key);
      edgeLines.add(
        `  ${quote(src)} -> ${quote(dst)} [id=${quote('fold|' + key)}, tooltip=${quote(edge.slot)}];`
      );
    }
  }
  // values passed between folded groups: an edge from the box writing to each box reading
  writers.forEach((from, varId) => {
    if (shown.has(varId)) {
      return;
    }
    for (const src of new Set(from)) {
      for (const dst of new Set(readers.get(varId) ?? [])) {
        const key = `${src}|${dst}`;
        if (src !== dst && !seen.has(key) && shown.has(src) && shown.has(dst)) {
          seen.add(key);
          const name = varName.get(varId) ?? varId;
          edgeLines.add(
            `  ${quote(src)} -> ${quote(dst)} [id=${quote('link|' + key)}, tooltip=${quote(name)}];`
          );
        }
      }
    }
  });
  lines.push(...edgeLines);
  lines.push(...ownerTies(model, shown).map(tie => '  ' + tie));
  lines.push('}');
  return { dot: lines.join('\n'), drawnAs, boxes };
}
