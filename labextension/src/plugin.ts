/**
 * Opens Paddle program files (`*.pdmodel`, `__model__`) and ONNX models (`*.onnx`) from the
 * file browser as program graphs. The bytes are binary protobuf; the server extension decodes
 * them with fluid_nb's own codec, an ONNX model through `fluid.onnx.to_program`
 * (`GET <base>/fluid-nb/api/program?path=<path>` returns the program model).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { URLExt } from '@jupyterlab/coreutils';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { IProgramModel, isProgramModel } from './model';
import { paramsPlugin } from './params';
import { IProgramHandle, renderProgram } from './view';

/** The file type name of program files. */
export const PROGRAM_FILE_TYPE = 'fluid-nb-program';
/** ONNX models open in the same viewer: the server reads them as programs */
export const ONNX_FILE_TYPE = 'fluid-nb-onnx-model';
/** The viewer's factory name (shown in "Open With"). */
export const PROGRAM_VIEWER = 'Fluid program graph';

/** Fetch the program model of a file, by its path relative to the server root. */
export async function fetchProgramModel(
  path: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<IProgramModel> {
  const url =
    URLExt.join(settings.baseUrl, 'fluid-nb/api/program') +
    URLExt.objectToQueryString({ path });
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.message ?? `${response.status} ${response.statusText}`);
  }
  if (!isProgramModel(body)) {
    throw new Error(`${path}: the server did not return a program model`);
  }
  return body;
}

/**
 * The content of a program file tab: the graph, or the error that stopped it.
 *
 * Loads may overlap (the file changes on disk while a graph is still being laid out); each
 * load takes a generation number and only the newest one may touch the DOM, so an older
 * load can neither dispose the newer graph nor replace it with its own error.
 */
class ProgramFileView extends Widget {
  private handle: IProgramHandle | null = null;
  private generation = 0;

  constructor(private readonly context: DocumentRegistry.Context) {
    super();
    this.addClass('fluid-nb-program-file');
    // reload when the file is reverted or changes on disk; the first load comes from `ready`
    // (the initial content also signals contentChanged, which must not start a second load)
    void context.ready.then(
      () => {
        context.model.contentChanged.connect(() => void this.load(), this);
        return this.load();
      },
      err => this.showError(++this.generation, err)
    );
  }

  private async load(): Promise<void> {
    const generation = ++this.generation;
    try {
      const model = await fetchProgramModel(this.context.localPath);
      if (!this.isCurrent(generation)) {
        return;
      }
      this.clear();
      const handle = renderProgram(this.node, model, { title: this.context.localPath });
      this.handle = handle;
      await handle.ready;
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
    box.className = 'fluid-nb-program-error';
    const reason = err instanceof Error ? err.message : String(err);
    box.textContent = `Cannot show ${this.context.localPath}: ${reason}`;
    this.node.appendChild(box);
  }

  private clear() {
    this.handle?.dispose();
    this.handle = null;
    this.node.replaceChildren();
  }

  dispose(): void {
    this.clear();
    super.dispose();
  }
}

class ProgramFileFactory extends ABCWidgetFactory<DocumentWidget<ProgramFileView>> {
  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<ProgramFileView> {
    const widget = new DocumentWidget({ content: new ProgramFileView(context), context });
    widget.title.caption = context.localPath;
    return widget;
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'fluid-nb-labext:program-file-viewer',
  description: 'Opens .pdmodel and __model__ program files and .onnx models as interactive graphs.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    app.docRegistry.addFileType({
      name: PROGRAM_FILE_TYPE,
      displayName: 'Paddle program',
      extensions: ['.pdmodel'],
      pattern: '^__model__$',
      mimeTypes: ['application/x-paddle-program'],
      fileFormat: 'base64',
      contentType: 'file'
    });
    app.docRegistry.addFileType({
      name: ONNX_FILE_TYPE,
      displayName: 'ONNX model',
      extensions: ['.onnx'],
      mimeTypes: ['application/x-onnx-model'],
      fileFormat: 'base64',
      contentType: 'file'
    });
    app.docRegistry.addWidgetFactory(
      new ProgramFileFactory({
        name: PROGRAM_VIEWER,
        label: 'Program graph',
        modelName: 'base64',
        fileTypes: [PROGRAM_FILE_TYPE, ONNX_FILE_TYPE],
        defaultFor: [PROGRAM_FILE_TYPE, ONNX_FILE_TYPE],
        readOnly: true
      })
    );
  }
};

// parameter files (`.pdiparams`, `__params__`) open as tables: see params.ts
export default [plugin, paramsPlugin];
