// The public testing entry: the scripted OpenAI-compatible model server, for a service's own tests of its agents
// (point OPENAI_BASE_URL at its baseURL). No queue, store or vendor SDK.
export {
  startScriptedModel,
  type RecordedRequest,
  type ReplyRule,
  type ScriptedAction,
  type ScriptedModelOptions,
  type ScriptedModelServer,
  type ScriptedReply,
} from './testing/scripted-model-server.js';

// What a prompt tells the model it has done, for scripted models: the results it was shown (tool messages or the
// facts of the auto memory, docs/memory.md) and how many turns of calls it has made.
export { observationsIn, turnsIn } from './kernel/memory.js';
