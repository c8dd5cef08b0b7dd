/* Replays a fuzz target's corpus without libFuzzer, so that every build (gcc included)
 * runs the fuzz target over its seeds under the sanitizers. Usage: replay DIR|FILE... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int s_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long len;

    if (!f) {
        perror(path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf || (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)) {
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0, bad = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;
        DIR *d;
        struct dirent *de;

        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += s_run_file(argv[i]) != 0;
            n++;
            continue;
        }
        if (!(d = opendir(argv[i])))
            return 1;
        while ((de = readdir(d))) {
            char path[4096];

            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            bad += s_run_file(path) != 0;
            n++;
        }
        closedir(d);
    }
    printf("replayed %d inputs, %d unreadable\n", n, bad);
    return (bad || n == 0) ? 1 : 0;
}
