/** A password file in memory, as LoginToken reads one (PasswordFs). */
import type { PasswordFs } from '../../src/auth/password-file.js';

/** `replace` puts a new file in its place (a new inode), as an editor or a rotated secret mount does. */
export function passwordFile(content: string): { fs: PasswordFs; replace(next: string): void } {
  let ino = 1n;
  return {
    fs: {
      stat: () => ({ ino, size: BigInt(content.length), mtimeNs: ino, ctimeNs: ino }),
      read: () => `${content}\n`,
    },
    replace: (next) => {
      content = next;
      ino++;
    },
  };
}
