/**
 * DOT text of a program model: `assembleDot` (the same text as `fluid_nb.viz.assemble_dot`)
 * and `segmentDots`, the layout plan for large programs.
 *
 * Why segments: Graphviz `dot` in WebAssembly needs about 3 s for a 1,000-op program laid out
 * as one graph, and its cost grows faster than the node count, so a graph that grows by ten
 * ops would be laid out again from scratch. Above `SEGMENT_THRESHOLD` ops the block-0 op list
 * is cut into runs of `SEGMENT_OPS` consecutive ops; each run is laid out as its own graph
 * (with the sub-blocks its ops own), and the graphs are stacked top to bottom in program
 * order. Every op, variable and edge is still drawn exactly once; a variable used by a later
 * run appears there as a dashed reference node (`class="var ref"`) that selects the real
 * variable when clicked. Segments are cut by op position, so appending ops changes only the
 * last segment's text, and only segments whose text changed are laid out again.
 */
import { IBlock, IProgramModel, IVar } from './model';

/** Programs with more ops than this (in shown blocks) are laid out in segments. */
export const SEGMENT_THRESHOLD = 150;
/** Block-0 ops per segment. */
export const SEGMENT_OPS = 30;
/**
 * Graph attributes added to each segment: fewer crossing-minimisation passes (`mclimit`) to
 * keep a segment's layout near 30 ms; the drawing stays a `dot` layered drawing.
 */
export const SEGMENT_GRAPH_ATTRS = 'graph [mclimit=0.2];';

/** A DOT string for Graphviz: `"` and `\` escaped, newlines as `\n`. */
export function quote(text: string): string {
  return '"' + text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
}

/** Blocks of the model by parent id (null for roots), in model order. */
function childrenOf(model: IProgramModel): Map<string | null, IBlock[]> {
  const children = new Map<string | null, IBlock[]>();
  for (const block of model.blocks) {
    const list = children.get(block.parent) ?? [];
    list.push(block);
    children.set(block.parent, list);
  }
  return children;
}

/** What is drawn: parameters inside their ops or as nodes, and roles left out. */
export interface IViewOptions {
  paramsAsNodes?: boolean;
  /** Op roles not drawn (`backward`, `optimize`), with the variables only they touch. */
  hiddenRoles?: string[];
}

/**
 * Element id to DOT statement of the ops and variables drawn under `options` (the same
 * choice as `fluid_nb.viz.dot.visible_statements`): an `inline` edge is a row of its op's box
 * unless `paramsAsNodes`; a variable that edges touch is drawn only when a drawn edge joins
 * it to a drawn op.
 */
export function visibleStatements(
  model: IProgramModel,
  options: IViewOptions = {}
): Map<string, string> {
  const asNodes = !!options.paramsAsNodes;
  const hiddenRoles = new Set(options.hiddenRoles ?? []);
  const statements = new Map<string, string>();
  const shownOps = new Set<string>();
  const hiddenBlocks = blocksOfHiddenOps(model, hiddenRoles);
  for (const op of model.ops) {
    if (hiddenRoles.has(op.role) || hiddenBlocks.has(op.block)) {
      continue;
    }
    shownOps.add(op.id);
    statements.set(op.id, op.dot_inline !== undefined && !asNodes ? op.dot_inline : op.dot);
  }
  const touched = new Set<string>();
  const touchedByShown = new Set<string>();
  for (const edge of model.edges) {
    const drawn = asNodes || !edge.inline;
    for (const [end, other] of [[edge.src, edge.dst], [edge.dst, edge.src]]) {
      touched.add(end);
      if (drawn && shownOps.has(other)) {
        touchedByShown.add(end);
      }
    }
  }
  for (const v of model.vars) {
    if ((v.inline && !asNodes) || hiddenBlocks.has(v.block)) {
      continue;
    }
    if (hiddenRoles.has('backward') && v.name.includes('@GRAD')) {
      continue;  // a gradient nothing uses yet is the backward pass's too
    }
    if (touched.has(v.id) && !touchedByShown.has(v.id)) {
      continue;
    }
    statements.set(v.id, v.dot);
  }
  return statements;
}

/** Blocks owned, directly or through their parents' owners, by an op of a hidden role
 * (`fluid_nb.viz.dot._blocks_of_hidden_ops`): hiding gradients hides `while_grad`'s block. */
function blocksOfHiddenOps(model: IProgramModel, hiddenRoles: Set<string>): Set<string> {
  const result = new Set<string>();
  if (!hiddenRoles.size) {
    return result;
  }
  const ops = new Map(model.ops.map(op => [op.id, op]));
  const owners = new Map(model.blocks.map(b => [b.id, b.owner]));
  const known = new Map<string, boolean>();
  const isHidden = (blockId: string, depth: number): boolean => {
    let hidden = known.get(blockId);
    if (hidden === undefined) {
      const owner = ops.get(owners.get(blockId) ?? '');
      hidden = !!owner && depth < 64 &&
        (hiddenRoles.has(owner.role) || isHidden(owner.block, depth + 1));
      known.set(blockId, hidden);
    }
    return hidden;
  };
  for (const blockId of owners.keys()) {
    if (isHidden(blockId, 0)) {
      result.add(blockId);
    }
  }
  return result;
}

/** Node statements per block of the elements drawn: ops, then variables, in model order. */
function nodesOf(
  model: IProgramModel,
  statements: Map<string, string>
): Map<string, { id: string; dot: string }[]> {
  const nodes = new Map<string, { id: string; dot: string }[]>();
  const add = (el: { id: string; block: string }) => {
    const dot = statements.get(el.id);
    if (dot === undefined) {
      return;
    }
    const list = nodes.get(el.block) ?? [];
    list.push({ id: el.id, dot });
    nodes.set(el.block, list);
  };
  model.ops.forEach(add);
  model.vars.forEach(add);
  return nodes;
}

/**
 * The whole DOT text: header; block b0's nodes; each child block as a nested
 * `subgraph "cluster_<bid>"`; every drawn edge whose two ends are shown; the `ownerTies`;
 * `}`. A collapsed block is
 * left out with its nested blocks (its owning op stays).
 */
export function assembleDot(
  model: IProgramModel,
  collapsed: Iterable<string> = [],
  options: IViewOptions = {}
): string {
  const hidden = new Set(collapsed);
  const nodes = nodesOf(model, visibleStatements(model, options));
  const children = childrenOf(model);
  const lines = [model.dot_header];
  const shown = new Set<string>();

  const emitNodes = (blockId: string, indent: string) => {
    for (const el of nodes.get(blockId) ?? []) {
      shown.add(el.id);
      lines.push(indent + el.dot);
    }
  };
  const emitCluster = (block: IBlock, indent: string) => {
    if (hidden.has(block.id)) {
      return;
    }
    lines.push(`${indent}subgraph ${quote('cluster_' + block.id)} {`);
    lines.push(`${indent}  label=${quote(block.label)};`);
    emitNodes(block.id, indent + '  ');
    for (const child of children.get(block.id) ?? []) {
      emitCluster(child, indent + '  ');
    }
    lines.push(`${indent}}`);
  };
  for (const root of children.get(null) ?? []) {
    if (hidden.has(root.id)) {
      continue;
    }
    emitNodes(root.id, '  ');
    for (const child of children.get(root.id) ?? []) {
      emitCluster(child, '  ');
    }
  }
  for (const edge of model.edges) {
    if (shown.has(edge.src) && shown.has(edge.dst) && (options.paramsAsNodes || !edge.inline)) {
      lines.push('  ' + edge.dot);
    }
  }
  lines.push(...ownerTies(model, shown).map(tie => '  ' + tie));
  lines.push('}');
  return lines.join('\n');
}

/**
 * Invisible edges from the op owning each drawn sub-block to the block's first drawn op
 * (`fluid_nb.viz.dot.owner_ties`): a sub-block whose inputs are rows of its ops may have no
 * edge to the rest of the graph, and Graphviz would place it anywhere.
 */
export function ownerTies(model: IProgramModel, shown: Set<string>): string[] {
  const first = new Map<string, string>();
  for (const op of model.ops) {
    if (shown.has(op.id) && !first.has(op.block)) {
      first.set(op.block, op.id);
    }
  }
  return model.blocks
    .filter(b => b.owner !== null && shown.has(b.owner) && first.has(b.id))
    .map(b => `${quote(b.owner!)} -> ${quote(first.get(b.id)!)} [style=invis];`);
}

/** One separately laid-out piece of the graph. */
export interface ISegment {
  /** DOT text; equal text means an equal drawing, so it is the cache key. */
  dot: string;
  /** Caption shown above the drawing (empty for a single-segment graph). */
  caption: string;
  /** Reference node id to the variable id it stands for. */
  refs: Map<string, string>;
}

/** Number of ops drawn when `collapsed` blocks are hidden. */
export function shownOpCount(
  model: IProgramModel,
  collapsed: Iterable<string> = [],
  options: IViewOptions = {}
): number {
  const hidden = hiddenBlocks(model, collapsed);
  const roles = new Set(options.hiddenRoles ?? []);
  return model.ops.filter(op => !hidden.has(op.block) && !roles.has(op.role)).length;
}

/** The collapsed blocks and every block nested in one. */
function hiddenBlocks(model: IProgramModel, collapsed: Iterable<string>): Set<string> {
  const hidden = new Set(collapsed);
  const byId = new Map(model.blocks.map(b => [b.id, b] as [string, IBlock]));
  for (const block of model.blocks) {
    for (let b: IBlock | undefined = block; b; b = b.parent ? byId.get(b.parent) : undefined) {
      if (hidden.has(b.id)) {
        hidden.add(block.id);
        break;
      }
    }
  }
  return hidden;
}

function refStatement(refId: string, v: IVar): string {
  return (
    `${quote(refId)} [id=${quote(refId)}, class="var ref", label=${quote(v.name)}, ` +
    `shape=ellipse, style=dashed, color="#9ca3af", fontcolor="#6b7280", ` +
    `tooltip=${quote(v.name + ' (drawn above)')}];`
  );
}

/**
 * The graph as segments to lay out one by one. Small graphs (up to `threshold` shown ops) are
 * one segment whose text is `assembleDot(model, collapsed)`.
 */
export function segmentDots(
  model: IProgramModel,
  collapsed: Iterable<string> = [],
  threshold = SEGMENT_THRESHOLD,
  perSegment = SEGMENT_OPS,
  options: IViewOptions = {}
): ISegment[] {
  const collapsedSet = new Set(collapsed);
  if (shownOpCount(model, collapsedSet, options) <= threshold) {
    return [{ dot: assembleDot(model, collapsedSet, options), caption: '', refs: new Map() }];
  }
  const statements = visibleStatements(model, options);
  const hidden = hiddenBlocks(model, collapsedSet);
  const blockById = new Map(model.blocks.map(b => [b.id, b] as [string, IBlock]));
  const opById = new Map(model.ops.map(op => [op.id, op]));
  const varById = new Map(model.vars.map(v => [v.id, v]));
  const roots = model.blocks.filter(b => b.parent === null).map(b => b.id);
  const root = roots[0];

  // Anchor: the block-0 op position a node belongs to (sub-block nodes: their owner's).
  const rootPosition = new Map<string, number>();
  model.ops.filter(op => op.block === root).forEach(op => rootPosition.set(op.id, op.index));
  const blockAnchor = (blockId: string): number | undefined => {
    let b = blockById.get(blockId);
    while (b && b.parent !== null) {
      const owner = b.owner ? opById.get(b.owner) : undefined;
      if (!owner) {
        return undefined;
      }
      if (owner.block === root) {
        return rootPosition.get(owner.id);
      }
      b = blockById.get(owner.block);
    }
    return undefined;
  };
  const segmentOfOp = new Map<string, number>();
  for (const op of model.ops) {
    const pos = op.block === root ? op.index : blockAnchor(op.block);
    segmentOfOp.set(op.id, Math.floor((pos ?? 0) / perSegment));
  }
  // A variable lives in the segment of its first writer, else of its first reader.
  const segmentOfVar = new Map<string, number>();
  const firstReader = new Map<string, number>();
  for (const edge of model.edges) {
    if (varById.has(edge.dst) && segmentOfOp.has(edge.src)) {
      const s = segmentOfOp.get(edge.src)!;
      segmentOfVar.set(edge.dst, Math.min(s, segmentOfVar.get(edge.dst) ?? s));
    } else if (varById.has(edge.src) && segmentOfOp.has(edge.dst)) {
      const s = segmentOfOp.get(edge.dst)!;
      firstReader.set(edge.src, Math.min(s, firstReader.get(edge.src) ?? s));
    }
  }
  for (const v of model.vars) {
    if (v.block !== root) {
      segmentOfVar.set(v.id, Math.floor((blockAnchor(v.block) ?? 0) / perSegment));
    } else if (!segmentOfVar.has(v.id)) {
      segmentOfVar.set(v.id, firstReader.get(v.id) ?? 0);
    }
  }
  const home = (id: string) => segmentOfOp.get(id) ?? segmentOfVar.get(id) ?? 0;
  let count = 1;
  segmentOfOp.forEach(s => (count = Math.max(count, s + 1)));

  const nodes = nodesOf(model, statements);
  const children = childrenOf(model);
  const segments: ISegment[] = [];
  for (let s = 0; s < count; s++) {
    const lines = [model.dot_header, '  ' + SEGMENT_GRAPH_ATTRS];
    const shown = new Set<string>();
    const refs = new Map<string, string>();
    const emitNodes = (blockId: string, indent: string, filter: boolean) => {
      for (const el of nodes.get(blockId) ?? []) {
        if (!filter || home(el.id) === s) {
          shown.add(el.id);
          lines.push(indent + el.dot);
        }
      }
    };
    const emitCluster = (block: IBlock, indent: string) => {
      if (hidden.has(block.id)) {
        return;
      }
      lines.push(`${indent}subgraph ${quote('cluster_' + block.id)} {`);
      lines.push(`${indent}  label=${quote(block.label)};`);
      emitNodes(block.id, indent + '  ', false);
      for (const child of children.get(block.id) ?? []) {
        emitCluster(child, indent + '  ');
      }
      lines.push(`${indent}}`);
    };
    emitNodes(root, '  ', true);
    for (const child of children.get(root) ?? []) {
      const anchor = blockAnchor(child.id);
      if (Math.floor((anchor ?? 0) / perSegment) === s) {
        emitCluster(child, '  ');
      }
    }
    const edgeLines: string[] = [];
    const refOf = (varId: string) => {
      const refId = `ref${s}|${varId}`;
      if (!refs.has(refId)) {
        refs.set(refId, varId);
        lines.push('  ' + refStatement(refId, varById.get(varId)!));
      }
      return refId;
    };
    for (const edge of model.edges) {
      if (edge.inline && !options.paramsAsNodes) {
        continue;  // a row of its op's box
      }
      const srcIn = shown.has(edge.src);
      const dstIn = shown.has(edge.dst);
      if (srcIn && dstIn) {
        edgeLines.push('  ' + edge.dot);
      } else if (srcIn !== dstIn) {
        // one end here, a variable drawn in another segment: edge to a reference node
        const other = srcIn ? edge.dst : edge.src;
        if (!varById.has(other) || hidden.has(varById.get(other)!.block) ||
            !statements.has(other)) {
          continue;
        }
        if (!srcIn && !opById.has(edge.dst)) {
          continue;
        }
        const ref = refOf(other);
        const [a, b] = srcIn ? [edge.src, ref] : [ref, edge.dst];
        edgeLines.push(
          `  ${quote(a)} -> ${quote(b)} [id=${quote(edge.id)}, tooltip=${quote(edge.slot)}];`
        );
      }
    }
    lines.push(...edgeLines, ...ownerTies(model, shown).map(tie => '  ' + tie), '}');
    const first = s * perSegment;
    segments.push({
      dot: lines.join('\n'),
      caption: `ops ${first}–${first + perSegment - 1} of ${blockById.get(root)?.label ?? root}`,
      refs
    });
  }
  return segments;
}
