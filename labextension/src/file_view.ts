/**
 * A file tab that shows what the server extension decodes from a binary file (a program's
 * graph, a parameter file's table), or the error that stopped it. The program and parameter
 * viewers are both this, with their own endpoint and drawing.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

/**
 * GET `<base>/fluid-nb/api/<endpoint>?path=<path>` and check the answer with `accept`;
 * a refusal becomes an Error carrying the server's one-line message.
 */
export async function fetchFileModel<T>(
  endpoint: string,
  path: string,
  accept: (body: unknown) => body is T,
  what: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url =
    URLExt.join(settings.baseUrl, 'fluid-nb/api', endpoint) + URLExt.objectToQueryString({ path });
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.message ?? `${response.status} ${response.statusText}`);
  }
  if (!accept(body)) {
    throw new Error(`${path}: the server did not return ${what}`);
  }
  return body;
}

/**
 * The content of a file tab. Loads may overlap (the file changes on disk while a drawing
 * is still being made): each load takes a generation number and only the newest one may
 * touch the DOM, so an older load can neither undo the newer drawing nor replace it with
 * its own error. The first load comes from the context's `ready`; later ones from
 * `contentChanged` (the initial content also signals it, which must not start a second).
 */
export abstract class FileModelView<T> extends Widget {
  private generation = 0;

  constructor(
    protected readonly context: DocumentRegistry.Context,
    className: string,
    private readonly errorClass: string
  ) {
    super();
    this.addClass(className);
    void context.ready.then(
      () => {
        context.model.contentChanged.connect(() => void this.load(), this);
        return this.load();
      },
      err => this.showError(++this.generation, err)
    );
  }

  /** The file's model, from the server. */
  protected abstract fetch(path: string): Promise<T>;

  /** Draw the model into the emptied node (called for the newest load only). */
  protected abstract draw(model: T): Promise<unknown> | void;

  /** Undo what `draw` made (listeners, handles) and empty the node. */
  protected clear(): void {
    this.node.replaceChildren();
  }

  private async load(): Promise<void> {
    const generation = ++this.generation;
    try {
      const model = await this.fetch(this.context.localPath);
      if (!this.isCurrent(generation)) {
        return;
      }
      this.clear();
      await this.draw(model);
    } catch (err) {
      this.showError(generation, err);
    }
  }

  private isCurrent(generation: number): boolean {
    return !this.isDisposed && generation === this.generation;
  }

  private showError(generation: number, err: unknown) {
    if (!this.isCurrent(generation)) {
      return;
    }
    this.clear();
    const box = document.createElement('div');
    box.className = this.errorClass;
    const reason = err instanceof Error ? err.message : String(err);
    box.textContent = `Cannot show ${this.context.localPath}: ${reason}`;
    this.node.appendChild(box);
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.clear();
    }
    super.dispose();
  }
}

/** The widget factory of a file viewer: a document tab around `make(context)`. */
export class FileViewFactory<V extends Widget> extends ABCWidgetFactory<DocumentWidget<V>> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<DocumentWidget<V>>,
    private readonly make: (context: DocumentRegistry.Context) => V
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<V> {
    const widget = new DocumentWidget({ content: this.make(context), context });
    widget.title.caption = context.localPath;
    return widget;
  }
}
