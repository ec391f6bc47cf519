/* fuser fuzzing: runs a harness's LLVMFuzzerTestOneInput over files, for
 * ctest's regression tests in builds without libFuzzer.
 *
 *   fuzz_replay_<target> [-v] PATH...
 *
 * A PATH that is a folder stands for every regular file in it (sorted, not
 * recursive, dot files skipped).  Each input is run once; a broken property
 * aborts, as it would under libFuzzer.  -v prints the diagnostics.  Exits
 * 0 when every file ran, 1 when a file could not be read, 2 on usage
 * errors. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads and runs one file; false when it cannot be read. */
static bool run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return false;
  }
  size_t cap = FUZZ_MAX_INPUT + 1, len = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    fprintf(stderr, "%s: out of memory\n", path);
    return false;
  }
  len = fread(buf, 1, cap, f);
  bool ok = !ferror(f);
  fclose(f);
  if (!ok) {
    perror(path);
  } else if (len > FUZZ_MAX_INPUT) {
    fprintf(stderr, "%s: larger than the harnesses' limit of %u bytes\n", path, FUZZ_MAX_INPUT);
    ok = false;
  } else {
    if (fuzz_verbose) fprintf(stderr, "== %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(buf, len);
  }
  free(buf);
  return ok;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs every regular file of folder `dir` in name order; returns how many
 * failed to run, or -1 when the folder cannot be read. */
static int run_dir(const char *dir, unsigned *count) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown) break;
      names = grown;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(names[n] = malloc(len))) break;
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      failed += !run_file(names[i]);
      ++*count;
    }
    free(names[i]);
  }
  free(names);
  return failed;
}

int main(int argc, char **argv) {
  int failed = 0, paths = 0;
  unsigned count = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0) {
      fuzz_verbose = true;
      continue;
    }
    paths++;
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      int r = run_dir(argv[i], &count);
      failed += r < 0 ? 1 : r;
    } else {
      failed += !run_file(argv[i]);
      count++;
    }
  }
  if (!paths) {
    fprintf(stderr, "usage: %s [-v] FILE|DIR...\n", argv[0]);
    return 2;
  }
  printf("%s: %u input(s) replayed, %d unreadable\n", argv[0], count, failed);
  return failed ? 1 : 0;
}
