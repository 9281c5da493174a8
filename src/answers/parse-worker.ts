/**
 * The DVR and recordings answer worker (a worker_threads entry; see ./parse-pool.ts): takes `{id, api, bytes,
 * arg}`, parses the body as the inline parser does, and answers `{id, api, packed}` (src/dvr/packed.ts,
 * src/recordings/packed.ts; their buffers transferred) or `{id, error}`. It holds no state between messages.
 */
import { parentPort } from 'node:worker_threads';
import {
  inventoryTransferables,
  type PackedInventory,
  packInventory,
  parseInventoryBody,
} from '../discovery/response.js';
import { dvrTransferables, type PackedDvrStreamResponse, packDvrStreamResponse } from '../dvr/packed.js';
import { parseDvrBody } from '../dvr/response.js';
import {
  type PackedRecordingList,
  packRecordingList,
  recordingsTransferables,
} from '../recordings/packed.js';
import { parseRecordingsBody } from '../recordings/response.js';

export type AnswerApi = 'dvr-net' | 'recorder-cloud' | 'inventory';

export interface AnswerRequest {
  id: number;
  api: AnswerApi;
  bytes: Uint8Array;
  /** dvr-net: the stream asked for; recorder-cloud: the account asked for. */
  arg: string | undefined;
}

export type AnswerReply =
  | { id: number; api: 'dvr-net'; packed: PackedDvrStreamResponse }
  | { id: number; api: 'recorder-cloud'; packed: PackedRecordingList }
  | { id: number; api: 'inventory'; packed: PackedInventory }
  | { id: number; error: { malformed: boolean; detail: string } };

const port = parentPort;
if (!port) throw new Error('answers/parse-worker.js runs as a worker thread (see src/answers/parse-pool.ts)');

port.on('message', (req: AnswerRequest) => {
  let reply: AnswerReply;
  let transfer: ArrayBuffer[] = [];
  try {
    if (req.api === 'dvr-net') {
      const packed = packDvrStreamResponse(parseDvrBody(req.bytes, req.arg));
      reply = { id: req.id, api: req.api, packed };
      transfer = dvrTransferables(packed);
    } else if (req.api === 'inventory') {
      const packed = packInventory(parseInventoryBody(req.bytes));
      reply = { id: req.id, api: req.api, packed };
      transfer = inventoryTransferables(packed);
    } else {
      const packed = packRecordingList(parseRecordingsBody(req.bytes, req.arg));
      reply = { id: req.id, api: req.api, packed };
      transfer = recordingsTransferables(packed);
    }
  } catch (err) {
    // ApiError does not survive structured cloning as itself; its kind and words do.
    const malformed = err instanceof Error && (err as { kind?: unknown }).kind === 'malformed';
    const detail = malformed ? ((err as { detail?: string }).detail ?? err.message) : String(err);
    reply = { id: req.id, error: { malformed, detail } };
  }
  port.postMessage(reply, transfer);
});
