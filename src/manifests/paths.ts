/** A failed file-system call, said in words: what the commands that read and write manifests report. */

/** What a failed stat, readdir, read or mkdir says about a path, in words, by its code. */
const PATH_PROBLEMS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ELOOP: 'a loop of symbolic links',
  EACCES: 'permission denied',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  ENAMETOOLONG: 'the name is too long',
};

/** A failed file-system call's error in words, or its own message for the rarer codes. */
export function pathProblemText(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return (code !== undefined && PATH_PROBLEMS[code]) || (err as Error).message;
}
