/**
 * A login's password read from its file (`password_file`), as ./login-token.ts uses it.
 *
 * Contracts:
 * - The file is read again only when a cheap `stat` shows a change (inode, size, times); a trailing newline
 *   (`echo pw > file`) is not part of the password, other whitespace is kept; an empty file is unreadable.
 * - Every password read is registered in src/redact.ts, and the one it replaces is dropped from the registry.
 * - An unreadable file is logged once per change of cause, and once when it is readable again; the log line names
 *   the file and the cause, never its content.
 */
import { type TokenFs, unreadableReason } from '../config/token.js';
import type { Logger } from '../log.js';
import { SECRETS } from '../redact.js';

/** The password's file system: the one a token file is read with; tests may pass their own. */
export type PasswordFs = TokenFs;

export class PasswordFile {
  #password: string | undefined;
  #stamp = '';
  #error: string | undefined;

  constructor(
    private readonly path: string,
    private readonly fs: PasswordFs,
    private readonly log: Logger,
    /** The login's username, for the log lines. */
    private readonly login: string,
  ) {}

  /** The password, or why the file cannot be read now (our words: the file and the cause). */
  read(): { password: string } | { unreadable: string } {
    const { path, log } = this;
    try {
      const s = this.fs.stat(path);
      const stamp = `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
      if (this.#password === undefined || stamp !== this.#stamp) {
        const text = this.fs.read(path).replace(/[\r\n]+$/, '');
        if (text === '') throw Object.assign(new Error('empty'), { code: 'is empty' });
        SECRETS.add(text);
        if (this.#password !== undefined && this.#password !== text) SECRETS.remove(this.#password);
        this.#password = text;
        this.#stamp = stamp;
      }
      if (this.#error !== undefined) {
        log.info({ login: this.login, file: path }, 'password file readable again');
        this.#error = undefined;
      }
      return { password: this.#password };
    } catch (e) {
      this.#password = undefined;
      const why = `password file ${path}: ${unreadableReason(e)}`;
      if (this.#error !== why) log.error({ login: this.login, error: why }, 'cannot log in');
      this.#error = why;
      return { unreadable: why };
    }
  }
}
