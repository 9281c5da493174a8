/**
 * Simulator of the recording-settings API (docs/upstream-api.md), mounted at /app/recorder-cloud/v1.
 * The lifecycle and its assumptions are in recorder-state.ts, the validation in recorder-validate.ts.
 *
 * HTTP assumptions where the document is silent:
 * - An unknown token is treated like a missing one: 401 `Invalid token`. A known token not entitled to the
 *   account: 403 `Invalid account`.
 * - Without `?all` each setting shows only its current (or latest) recording instance; with `?all`, every one.
 * - `extra_fields=status` puts `status` on the setting and on each instance; unknown extra field names are ignored.
 * - GET of an unknown (or deactivated) id: 404 `Not found`. A body that is not JSON: 422 `{errors: {body: [...]}}`.
 * - The common 400 `Invalid path` (text/plain) answers a malformed path, checked before the token: a segment that
 *   is not valid percent-encoding, an empty segment (`//`), or one that decodes to text holding `/` (an encoded
 *   slash, as in an id `a%2Fb`) or a control character (see isValidPath). A well-formed path that names no
 *   endpoint is 404 `Not found`; PATCH of an unknown but well-formed id is the endpoint's 400 without a body.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { isRecord } from '../http/parse.js';
import { RecorderState } from './recorder-state.js';
import {
  type FieldErrors,
  isValidPath,
  parseAction,
  validateChange,
  validateCreate,
} from './recorder-validate.js';
import type { RecorderSim, SimContext } from './types.js';

function text(res: Response, code: number, body: string): void {
  res.status(code).type('text/plain').send(body);
}

function unprocessable(res: Response, errors: FieldErrors): void {
  res.status(422).json({ errors });
}

function queryValues(v: unknown): string[] {
  const list = Array.isArray(v) ? v : v === undefined ? [] : [v];
  return list.flatMap((x) => String(x).split(',')).map((x) => x.trim());
}

export function createRecorderSim(ctx: SimContext): RecorderSim & { state: RecorderState } {
  const state = new RecorderState(ctx);
  const router = express.Router();

  router.use((req, res, next) => {
    if (isValidPath(req.path)) next();
    else text(res, 400, 'Invalid path');
  });

  const auth = (req: Request, res: Response, next: NextFunction): void => {
    const token = req.get('cdn-auth-token');
    const allowed = token ? ctx.accountsForToken(token) : undefined;
    if (!allowed) {
      text(res, 401, 'Invalid token');
      return;
    }
    if (!allowed.includes(String(req.params.account))) {
      text(res, 403, 'Invalid account');
      return;
    }
    next();
  };

  const notAllowed = (_req: Request, res: Response): void => text(res, 405, 'Method is not allowed');

  const viewOptions = (req: Request) => {
    const query = req.query as Record<string, unknown>;
    return { all: query.all !== undefined, status: queryValues(query.extra_fields).includes('status') };
  };

  const resourceFilter = (req: Request): string | undefined => {
    const v = (req.query as Record<string, unknown>).resource_id;
    return typeof v === 'string' ? v : undefined;
  };

  router
    .route('/:account/record')
    .all(auth)
    .get((req, res) => {
      const resourceId = resourceFilter(req);
      const opts = viewOptions(req);
      const settings = state
        .list(String(req.params.account))
        .filter((s) => resourceId === undefined || s.resourceId === resourceId);
      res.json(settings.map((s) => state.view(s, opts)));
    })
    .put(express.json(), (req, res) => {
      const parsed = validateCreate(req.body);
      if (!parsed.ok) {
        unprocessable(res, parsed.errors);
        return;
      }
      const created = state.create(String(req.params.account), parsed.value);
      if (!created) {
        res.status(409).end();
        return;
      }
      res.status(201).json({ id: created.id });
    })
    .all(notAllowed);

  router
    .route('/:account/record/:id')
    .all(auth)
    .get((req, res) => {
      const setting = state.get(String(req.params.account), String(req.params.id));
      if (!setting) {
        text(res, 404, 'Not found');
        return;
      }
      const resourceId = resourceFilter(req);
      const match = resourceId === undefined || setting.resourceId === resourceId;
      res.json(match ? [state.view(setting, viewOptions(req))] : []);
    })
    .patch(express.json(), (req, res) => {
      const setting = state.get(String(req.params.account), String(req.params.id));
      if (!setting) {
        res.status(400).end();
        return;
      }
      const body: unknown = req.body ?? {};
      if (!isRecord(body)) {
        unprocessable(res, { body: ['Must be a JSON object.'] });
        return;
      }
      const action = parseAction(body);
      if (!action.ok) {
        unprocessable(res, action.errors);
        return;
      }
      if (action.value === 'change') {
        const change = validateChange(body, setting, setting.status === 'progress');
        if (!change.ok) {
          unprocessable(res, change.errors);
          return;
        }
        state.change(setting, change.value);
      } else {
        const outcome = state.act(setting, action.value);
        if (!outcome.ok) {
          unprocessable(res, { [outcome.field]: [outcome.message] });
          return;
        }
      }
      res.status(200).end();
    })
    .all(notAllowed);

  router.use((_req, res) => text(res, 404, 'Not found'));

  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    if (isRecord(err) && err.type === 'entity.parse.failed') {
      unprocessable(res, { body: ['Malformed JSON.'] });
      return;
    }
    res.status(500).type('text/html').send('');
  });

  return { router, state, setStatus: (account, id, status) => state.setStatus(account, id, status) };
}
