/**
 * One Graphviz (WebAssembly) instance per page, created on first use. The import is dynamic
 * so the JupyterLab build puts the 2 MB module in its own chunk, fetched only when a program
 * is first drawn.
 */
type Viz = Awaited<ReturnType<typeof import('@viz-js/viz').instance>>;

let vizPromise: Promise<Viz> | null = null;

/** The shared Graphviz instance. */
export function graphviz(): Promise<Viz> {
  if (!vizPromise) {
    vizPromise = import('@viz-js/viz').then(m => m.instance());
    vizPromise.catch(() => (vizPromise = null));
  }
  return vizPromise;
}

/**
 * An SVG drawing of `dot`, cleaned so nothing in it can run code or fetch anything: model
 * text reaches Graphviz unescaped in untrusted notebooks, and DOT attributes such as `URL`,
 * `href` or `image` would become links and image requests in the SVG.
 */
export function drawSvg(viz: Viz, dot: string): SVGSVGElement {
  const svg = viz.renderSVGElement(dot);
  // Graphviz writes links only as <a> elements and pictures only as <image>; attribute values
  // are XML-escaped, so these are the only places to clean
  svg.querySelectorAll('image, script, foreignObject').forEach(el => el.remove());
  svg.querySelectorAll('a').forEach(a => {
    for (const name of ['href', 'xlink:href', 'target']) {
      a.removeAttribute(name);
    }
    a.removeAttributeNS('http://www.w3.org/1999/xlink', 'href');
  });
  return svg;
}
