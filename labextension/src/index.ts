/**
 * JupyterLab MIME renderer for `application/vnd.fluid-nb.program+json`: program outputs render
 * as an interactive graph without a kernel, in saved and untrusted notebooks too (`safe`:
 * the renderer builds its DOM with DOM calls and strips links and images from the SVG).
 *
 * This module is also the library entry: it re-exports `renderProgram` and friends for the
 * widget and the standalone viewer.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { IProgramHandle, IRenderOptions, renderProgram } from './view';
import { IProgramModel, PROGRAM_MIME, isProgramDelta, isProgramModel } from './model';

export { renderProgram, applyDelta } from './view';
export type { IProgramHandle, IRenderOptions, IRenderStats, ISelection } from './view';
export { applyDelta as applyModelDelta, DeltaMismatch } from './delta';
export { assembleDot, segmentDots, visibleStatements } from './dot';
export type { IViewOptions } from './dot';
export * from './model';

const CLASS_NAME = 'fluid-nb-program-output';

/** What a model asks to be opened at (`fluid_nb.viz.show`): a part to reveal, roles hidden. */
export function viewOf(model: IProgramModel): IRenderOptions {
  const view = (model.view ?? {}) as { reveal?: unknown; hiddenRoles?: unknown };
  const options: IRenderOptions = {};
  if (typeof view.reveal === 'string' && view.reveal) {
    options.reveal = view.reveal;
  }
  if (Array.isArray(view.hiddenRoles)) {
    options.hiddenRoles = view.hiddenRoles.filter((r): r is string => typeof r === 'string');
  }
  return options;
}

/** Draws one program model output. */
export class ProgramRenderer extends Widget implements IRenderMime.IRenderer {
  private handle: IProgramHandle | null = null;

  constructor(private readonly mimeType: string) {
    super();
    this.addClass(CLASS_NAME);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[this.mimeType];
    this.handle?.dispose();
    this.handle = null;
    this.node.replaceChildren();
    if (isProgramModel(data)) {
      this.handle = renderProgram(this.node, data, viewOf(data));
      await this.handle.ready;
    } else if (isProgramDelta(data)) {
      // a delta alone has nothing to apply to; the ProgramView widget consumes deltas
      const n = (data.add.ops ?? []).length;
      this.node.textContent = `fluid_nb program delta: revision ${data.base} → ${data.revision}, ${n} ops added`;
    } else {
      this.node.textContent = 'fluid_nb: this output is not a program model.';
    }
  }

  dispose(): void {
    this.handle?.dispose();
    this.handle = null;
    super.dispose();
  }
}

/**
 * The rank JupyterLab picks the renderer of an output by (lowest first). A program's bundle
 * also carries `text/html` (the listing, for frontends without this extension), whose
 * renderer has rank 50: the graph must rank before it to be what a cell's result shows.
 */
export const RENDERER_RANK = 10;

/** The renderer factory: safe, so untrusted notebooks show the graph too. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [PROGRAM_MIME],
  defaultRank: RENDERER_RANK,
  createRenderer: options => new ProgramRenderer(options.mimeType)
};

/** The MIME extension record JupyterLab loads. */
const extension: IRenderMime.IExtension = {
  id: 'fluid-nb-labext:program-renderer',
  description: 'Renders fluid_nb program models as interactive graphs.',
  rendererFactory,
  rank: RENDERER_RANK,
  dataType: 'json'
};

export default extension;
