// What a worker hands the tool sources of its fleet configuration when it opens them at start: the tools' own
// port (src/tools/tool-services.ts), which the worker implements; tools never import the worker.
import type { ToolServices } from '../tools/tool-services.js';

export type WorkerServices = ToolServices;
