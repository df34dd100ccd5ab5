// Runs the front end's pure graph functions on JSON from a file, for the Python tests:
// node <bundle> assemble|apply|segments|slots <input.json>  ->  JSON on stdout
import { readFileSync } from 'fs';
import { assembleDot, segmentDots } from '../../labextension/src/dot';
import { applyDelta } from '../../labextension/src/delta';
import { Hierarchy, firstSightOpen, foldedDot } from '../../labextension/src/hierarchy';
import { ModelIndex } from '../../labextension/src/details';
import { bytesText, memoryFill, memoryText } from '../../labextension/src/memory';

const [command, file] = process.argv.slice(2);
const input = JSON.parse(readFileSync(file, 'utf8'));
let out;
if (command === 'assemble') {
  out = assembleDot(input.model, input.collapsed ?? [], input.options ?? {});
} else if (command === 'folded') {
  // the folded drawing: the groups open at first sight (unless given) and its DOT text
  const hierarchy = new Hierarchy(input.model);
  const hidden = new Set(input.options?.hiddenRoles ?? []);
  const visible = new Set(input.model.ops.filter(op => !hidden.has(op.role)).map(op => op.id));
  const open = input.open ? new Set(input.open) : firstSightOpen(hierarchy, visible);
  const drawing = foldedDot(input.model, hierarchy, open, new Set(input.collapsed ?? []),
                            input.options ?? {});
  out = { open: [...open], dot: drawing.dot, drawnAs: Object.fromEntries(drawing.drawnAs),
          boxes: [...drawing.boxes] };
} else if (command === 'apply') {
  out = applyDelta(input.model, input.delta);
} else if (command === 'segments') {
  out = segmentDots(input.model, input.collapsed ?? [], input.threshold, input.per,
                    input.options ?? {}).map(s => ({
    dot: s.dot,
    refs: Object.fromEntries(s.refs)
  }));
} else if (command === 'slots') {
  // what the details panel lists in each slot of each op: variable names, [] for none
  const index = new ModelIndex(input.model);
  out = Object.fromEntries(input.model.ops.map(op => [op.id, Object.fromEntries(
    ['in', 'out'].flatMap(dir => Object.keys(dir === 'in' ? op.inputs : op.outputs).map(
      slot => [`${dir}:${slot}`,
               index.slotVars(op, slot, dir).map(v => (typeof v === 'string' ? v : v.name))])))]));
} else if (command === 'memory') {
  // per op of memory figures: the details panel's text and the node's fill; byte texts
  const f = input.figures;
  out = {
    texts: Object.fromEntries(Object.entries(f.ops).map(([id, op]) => [id, memoryText(op)])),
    fills: Object.fromEntries(Object.entries(f.ops).map(
      ([id, op]) => [id, memoryFill(op.bytes, f.min, f.max)])),
    nothing: memoryText(null),
    bytes: (input.sizes ?? []).map(bytesText)
  };
} else {
  throw new Error(`unknown command ${command}`);
}
process.stdout.write(JSON.stringify(out));
