/**
 * Opens Paddle program files (`*.pdmodel`, `__model__`) and ONNX models (`*.onnx`) from the
 * file browser as program graphs. The bytes are binary protobuf; the server extension decodes
 * them with fluid_nb's own codec, an ONNX model through `fluid.onnx.to_program`
 * (`GET <base>/fluid-nb/api/program?path=<path>` returns the program model).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { ServerConnection } from '@jupyterlab/services';

import { FileModelView, FileViewFactory, fetchFileModel } from './file_view';
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
export function fetchProgramModel(
  path: string,
  settings?: ServerConnection.ISettings
): Promise<IProgramModel> {
  return fetchFileModel('program', path, isProgramModel, 'a program model', settings);
}

/** The content of a program file tab: the graph, or the error that stopped it. */
class ProgramFileView extends FileModelView<IProgramModel> {
  private handle: IProgramHandle | null = null;

  constructor(context: DocumentRegistry.Context) {
    super(context, 'fluid-nb-program-file', 'fluid-nb-program-error');
  }

  protected fetch(path: string): Promise<IProgramModel> {
    return fetchProgramModel(path);
  }

  protected draw(model: IProgramModel): Promise<unknown> {
    this.handle = renderProgram(this.node, model, { title: this.context.localPath });
    return this.handle.ready;
  }

  protected clear(): void {
    this.handle?.dispose();
    this.handle = null;
    super.clear();
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
      new FileViewFactory(
        {
          name: PROGRAM_VIEWER,
          label: 'Program graph',
          modelName: 'base64',
          fileTypes: [PROGRAM_FILE_TYPE, ONNX_FILE_TYPE],
          defaultFor: [PROGRAM_FILE_TYPE, ONNX_FILE_TYPE],
          readOnly: true
        },
        context => new ProgramFileView(context)
      )
    );
  }
};

// parameter files (`.pdiparams`, `__params__`) open as tables: see params.ts
export default [plugin, paramsPlugin];
