/**
 * The standalone viewer bundle (`fluid_nb/static/viewer.js`, an IIFE with Graphviz inlined):
 * defines `window.fluidNbViewer` for the widgets (loaded once per page from the Jupyter
 * server) and for self-contained HTML pages (`fluid_nb.viz.html_page`).
 */
import { renderProgram, applyDelta } from '../src/view';
import { assembleDot } from '../src/dot';
import { renderTensor } from '../widget/views/tensor';
import { renderScope } from '../widget/views/scope';
import { renderStepper } from '../widget/views/stepper';
import { renderMemory } from '../widget/views/memory';
import { injectStyle } from './style';
import { graphviz } from '../src/viz';

const api = { renderProgram, applyDelta, renderTensor, renderScope, renderStepper, renderMemory, assembleDot };

declare global {
  interface Window {
    fluidNbViewer: typeof api;
  }
}

injectStyle();
// start compiling Graphviz now: the page loaded this bundle to draw a graph soon
void graphviz();
window.fluidNbViewer = api;
