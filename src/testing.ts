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

// How a scripted model reads a request, as a trained one does: from its own turns (its calls and the results that
// answered them), never from text written about them.
export {
  modelCalls,
  modelTurns,
  observationsIn,
  taskOf,
  turnsIn,
  type TranscriptCall,
  type TranscriptTurn,
} from './testing/transcript.js';
