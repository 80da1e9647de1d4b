/*
 * altarr's native kernel (module altarr._native): the per-chunk hot loop of region reads and writes, GIL
 * released for the whole batch, and blosc calls for the Python path.
 *
 * Reads: for each task, pread a chunk's byte range (or take it from a bytes-like object in memory),
 * decompress it into a reused per-thread buffer (or straight into the destination when the chunk lands
 * in one C-contiguous run of it) and scatter the selected part into the output array (strided copy).
 * Writes: gather_chunk lays a chunk from a strided source array out in one buffer (padding edge chunks
 * with the fill value) and tells fill-valued chunks apart; the codec then compresses it (blosc through
 * blosc_compress below, zstd through python-zstandard).
 *
 * No codec is implemented here: it links libzstd (zstd.h, stable API, >= 1.4; decoding) and c-blosc 1.x
 * (blosc.h, the reentrant *_ctx calls), found by setup.py. Every decode is bounded: a frame whose decoded size is
 * not exactly the chunk's size is reported as a failure (the destination capacity given to the codec is
 * the chunk's size, never more), and the Python wrapper then runs the pure-Python path for that chunk,
 * which raises the error naming the key, chunk and codec. Work is shared between the pool's threads
 * through one atomic counter per batch.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blosc.h>
#include <zstd.h>

#if BLOSC_VERSION_MAJOR != 1 || BLOSC_VERSION_MINOR < 16
#error "c-blosc 1.x (>= 1.16) is needed: blosc 1 frames, as numcodecs, zarr and N5 read them"
#endif
#if ZSTD_VERSION_NUMBER < 10400
#error "libzstd >= 1.4.0 is needed"
#endif

#define MAXDIM 32
#define KEEP_BYTES ((size_t)64 << 20)

/* task status codes (shared with kernel.py) */
#define ST_OK 0
#define ST_PENDING 1
#define ST_READ_FAILED -1   /* pread failed */
#define ST_SHORT_READ -2    /* fewer bytes than the range asks for */
#define ST_DECODE_FAILED -3 /* the codec refused the frame */
#define ST_SIZE_MISMATCH -4 /* the frame does not decode to exactly the chunk's size */
#define ST_NO_MEMORY -5
#define ST_BAD_TASK -6      /* geometry outside the chunk or the output */

#define CODEC_ZSTD 1
#define CODEC_BLOSC 2

/* --- per-thread state: reused buffers and zstd contexts, freed when the thread ends ---------------- */
typedef struct {
    void *in;
    size_t in_cap;
    void *scratch;
    size_t scratch_cap;
    ZSTD_DCtx *dctx;
} tstate;

static pthread_key_t tkey;
static pthread_once_t tonce = PTHREAD_ONCE_INIT;

static void tstate_free(void *p) {
    tstate *t = (tstate *)p;
    free(t->in);
    free(t->scratch);
    ZSTD_freeDCtx(t->dctx); /* NULL is accepted */
    free(t);
}

static void make_key(void) { (void)pthread_key_create(&tkey, tstate_free); }

static tstate *get_tstate(void) {
    pthread_once(&tonce, make_key);
    tstate *t = (tstate *)pthread_getspecific(tkey);
    if (!t) {
        t = (tstate *)calloc(1, sizeof *t);
        if (t && pthread_setspecific(tkey, t)) {
            free(t);
            t = NULL;
        }
    }
    return t;
}

/* A buffer of at least `need` bytes, reused across calls; given back when it is far larger than needed
 * and above KEEP_BYTES (as the Python path's scratch buffers are). */
static void *grow(void **buf, size_t *cap, size_t need) {
    if (need == 0) need = 1;
    if (*buf && *cap >= need && !(*cap > KEEP_BYTES && need < *cap / 4)) return *buf;
    free(*buf);
    *buf = NULL;
    *cap = 0;
    void *p = NULL;
    if (posix_memalign(&p, 64, need)) return NULL;
    *buf = p;
    *cap = need;
    return p;
}

/* --- strided copies ------------------------------------------------------------------------------------ */
/* Step the odometer `idx` over dimensions [0, top] (the last fastest), moving both pointers along;
 * returns 0 once every position has been visited. */
static inline int next_position(int top, int64_t *idx, const int64_t *count, const int64_t *sstr,
                                const int64_t *dstr, const char **s, char **dd) {
    for (int d = top; d >= 0; d--) {
        idx[d]++;
        *s += sstr[d];
        *dd += dstr[d];
        if (idx[d] < count[d]) return 1;
        *s -= sstr[d] * count[d];
        *dd -= dstr[d] * count[d];
        idx[d] = 0;
    }
    return 0;
}

/* Copy `n` items of `size` bytes from `ps` (byte stride `ss`) to `pd` (stride `ds`); the sizes the kernel
 * meets most (elements, short rows) are constants in the copy, so the compiler inlines it. */
static inline void copy_items(char *pd, int64_t ds, const char *ps, int64_t ss, int64_t n, size_t size) {
#define COPY_ITEMS(N) for (int64_t j = 0; j < n; j++, ps += ss, pd += ds) memcpy(pd, ps, N)
    switch (size) {
    case 1: COPY_ITEMS(1); break;
    case 2: COPY_ITEMS(2); break;
    case 4: COPY_ITEMS(4); break;
    case 8: COPY_ITEMS(8); break;
    case 16: COPY_ITEMS(16); break;
    case 32: COPY_ITEMS(32); break;
    case 64: COPY_ITEMS(64); break;
    case 128: COPY_ITEMS(128); break;
    default: COPY_ITEMS(size);
    }
#undef COPY_ITEMS
}

/* Copy an n-d block of `count` elements of `isz` bytes between two strided layouts (byte strides).
 * Innermost dimensions that are contiguous in both layouts are merged into one run, so a block that is
 * one run in both is one memcpy; otherwise the innermost dimension is copied element by element. */
static void copy_nd(int ndim, const int64_t *count_in, size_t isz, const char *src, const int64_t *sstr_in,
                    char *dst, const int64_t *dstr_in) {
    int64_t count[MAXDIM], sstr[MAXDIM], dstr[MAXDIM];
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (count_in[d] == 0) return;
        if (count_in[d] == 1) continue; /* a dimension of one element moves nothing */
        count[n] = count_in[d];
        sstr[n] = sstr_in[d];
        dstr[n] = dstr_in[d];
        n++;
    }
    if (n == 0) {
        memcpy(dst, src, isz);
        return;
    }
    const int64_t esz = (int64_t)isz;
    int m = n - 1; /* dims [0, m) are iterated; dim m (and those merged into it) is the inner loop */
    const int contiguous = (sstr[m] == esz && dstr[m] == esz);
    int64_t run = count[m] * esz;
    if (contiguous) {
        while (m > 0 && sstr[m - 1] == run && dstr[m - 1] == run) {
            run *= count[m - 1];
            m--;
        }
    }
    /* The inner loop walks one dimension (`walk`, -1: none) moving items of `size` bytes; the odometer
     * steps the dimensions before it. Runs of a small fixed size (a chunk's innermost row: 32 uint16 are
     * 64 bytes) are walked over the next dimension out, so each is a constant-size copy the compiler
     * inlines, not one libc call per run: that call was half the copy's time (a 128x256x256 uint16
     * slab in 32^3 chunks: 262144 runs). */
    int walk;
    size_t size;
    if (contiguous && m > 0 && (run == 16 || run == 32 || run == 64 || run == 128)) {
        walk = m - 1;
        size = (size_t)run;
    } else if (contiguous) {
        walk = -1; /* one run per position */
        size = (size_t)run;
    } else {
        walk = m; /* element by element */
        size = isz;
    }
    const int top = (walk < 0 ? m : walk) - 1;
    const int64_t wn = walk < 0 ? 1 : count[walk];
    const int64_t ws = walk < 0 ? 0 : sstr[walk], wd = walk < 0 ? 0 : dstr[walk];
    int64_t idx[MAXDIM];
    memset(idx, 0, sizeof idx);
    const char *s = src;
    char *dd = dst;
    for (;;) {
        copy_items(dd, wd, s, ws, wn, size);
        if (!next_position(top, idx, count, sstr, dstr, &s, &dd)) return;
    }
}

/* --- codecs ---------------------------------------------------------------------------------------------- */
static int decode_zstd(tstate *t, const void *in, size_t len, void *dst, size_t expected) {
    unsigned long long cs = ZSTD_getFrameContentSize(in, len);
    if (cs == ZSTD_CONTENTSIZE_ERROR) return ST_DECODE_FAILED;
    if (cs != ZSTD_CONTENTSIZE_UNKNOWN && cs != (unsigned long long)expected) return ST_SIZE_MISMATCH;
    if (!t->dctx) {
        t->dctx = ZSTD_createDCtx();
        if (!t->dctx) return ST_NO_MEMORY;
    }
    size_t r = ZSTD_decompressDCtx(t->dctx, dst, expected, in, len);
    if (ZSTD_isError(r)) return ST_DECODE_FAILED;
    return r == expected ? ST_OK : ST_SIZE_MISMATCH;
}

static int decode_blosc(const void *in, size_t len, void *dst, size_t expected) {
    size_t nbytes = 0;
    if (len < BLOSC_MIN_HEADER_LENGTH || blosc_cbuffer_validate(in, len, &nbytes) != 0) return ST_DECODE_FAILED;
    if (nbytes != expected) return ST_SIZE_MISMATCH;
    int r = blosc_decompress_ctx(in, dst, expected, 1);
    if (r < 0) return ST_DECODE_FAILED;
    return (size_t)r == expected ? ST_OK : ST_SIZE_MISMATCH;
}

static int decode(int codec, tstate *t, const void *in, size_t len, void *dst, size_t expected) {
    return codec == CODEC_ZSTD ? decode_zstd(t, in, len, dst, expected) : decode_blosc(in, len, dst, expected);
}

/* --- sources --------------------------------------------------------------------------------------------- */
typedef struct {
    int fd; /* >= 0: read with pread; -1: `view` holds the bytes */
    Py_buffer view;
    int has_view;
} source;

static void release_sources(source *src, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (src[i].has_view) PyBuffer_Release(&src[i].view);
    PyMem_Free(src);
}

/* One source per item of `seq`: an int is a file descriptor, anything else a C-contiguous bytes-like
 * object. */
static source *acquire_sources(PyObject *seq, Py_ssize_t *n_out) {
    PyObject *fast = PySequence_Fast(seq, "sources must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    source *src = (source *)PyMem_Calloc(n ? n : 1, sizeof(source));
    if (!src) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (PyLong_Check(o)) {
            long fd = PyLong_AsLong(o);
            if (fd < 0 || fd > INT32_MAX) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad file descriptor");
                release_sources(src, i);
                Py_DECREF(fast);
                return NULL;
            }
            src[i].fd = (int)fd;
        } else {
            src[i].fd = -1;
            if (PyObject_GetBuffer(o, &src[i].view, PyBUF_SIMPLE) < 0) {
                release_sources(src, i);
                Py_DECREF(fast);
                return NULL;
            }
            src[i].has_view = 1;
        }
    }
    Py_DECREF(fast);
    *n_out = n;
    return src;
}

static int pread_full(int fd, void *buf, size_t len, int64_t off) {
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(fd, (char *)buf + got, len - got, (off_t)(off + (int64_t)got));
        if (k < 0) {
            if (errno == EINTR) continue;
            return ST_READ_FAILED;
        }
        if (k == 0) return ST_SHORT_READ;
        got += (size_t)k;
    }
    return ST_OK;
}

/* --- reads ----------------------------------------------------------------------------------------------- */
typedef struct {
    int ndim;
    int codec;
    size_t isz;
    size_t expected; /* bytes of one whole decoded chunk */
    int64_t cshape[MAXDIM];
    int64_t cstride[MAXDIM]; /* C-order byte strides of a whole chunk */
    char *out;
    int64_t oshape[MAXDIM];
    int64_t ostride[MAXDIM];
} read_geo;

/* task record: source, offset, length, then per dimension (src start, src step, count, dst start) */
static int read_task(const read_geo *g, const source *srcs, Py_ssize_t nsrc, const int64_t *r) {
    tstate *t = get_tstate();
    if (!t) return ST_NO_MEMORY;
    const int64_t si = r[0], off = r[1], len = r[2];
    const int64_t *dims = r + 3;
    if (si < 0 || si >= nsrc || off < 0 || len < 0) return ST_BAD_TASK;
    int64_t count[MAXDIM], sstr[MAXDIM];
    char *dst = g->out;
    int64_t soff = 0;
    int whole = 1, contiguous = 1;
    for (int d = 0; d < g->ndim; d++) {
        const int64_t start = dims[4 * d], step = dims[4 * d + 1], n = dims[4 * d + 2], dstart = dims[4 * d + 3];
        if (n < 0 || step < 1 || start < 0 || dstart < 0 || dstart + n > g->oshape[d]) return ST_BAD_TASK;
        if (n > 0 && start + (n - 1) * step >= g->cshape[d]) return ST_BAD_TASK;
        count[d] = n;
        sstr[d] = step * g->cstride[d];
        soff += start * g->cstride[d];
        dst += dstart * g->ostride[d];
        if (start != 0 || step != 1 || n != g->cshape[d]) whole = 0;
        if (n > 1 && g->ostride[d] != g->cstride[d]) contiguous = 0;
    }
    const source *s = &srcs[si];
    const char *in;
    if (s->fd >= 0) {
        char *buf = (char *)grow(&t->in, &t->in_cap, (size_t)len);
        if (!buf) return ST_NO_MEMORY;
        int st = pread_full(s->fd, buf, (size_t)len, off);
        if (st != ST_OK) return st;
        in = buf;
    } else {
        if (off + len > (int64_t)s->view.len) return ST_SHORT_READ;
        in = (const char *)s->view.buf + off;
    }
    if (whole && contiguous) /* the chunk is one run of the output: decode straight into it */
        return decode(g->codec, t, in, (size_t)len, dst, g->expected);
    char *scratch = (char *)grow(&t->scratch, &t->scratch_cap, g->expected);
    if (!scratch) return ST_NO_MEMORY;
    int st = decode(g->codec, t, in, (size_t)len, scratch, g->expected);
    if (st != ST_OK) return st;
    copy_nd(g->ndim, count, g->isz, scratch + soff, sstr, dst, g->ostride);
    return ST_OK;
}

static int parse_shape(PyObject *obj, int64_t *shape, int *ndim) {
    PyObject *fast = PySequence_Fast(obj, "chunk_shape must be a sequence");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAXDIM) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "too many dimensions for the native kernel");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        if (v < 1) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "chunk dimensions must be positive");
            return -1;
        }
        shape[i] = v;
    }
    *ndim = (int)n;
    Py_DECREF(fast);
    return 0;
}

static int check_codec(int codec) {
    if (codec == CODEC_ZSTD || codec == CODEC_BLOSC) return 0;
    PyErr_SetString(PyExc_ValueError, "unknown codec");
    return -1;
}

static int64_t *counter_ptr(Py_buffer *b) {
    if (b->len < (Py_ssize_t)sizeof(int64_t) || ((uintptr_t)b->buf % sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "counter must be an aligned int64 buffer");
        return NULL;
    }
    return (int64_t *)b->buf;
}

PyDoc_STRVAR(read_chunks_doc,
             "read_chunks(sources, tasks, counter, status, out, chunk_shape, codec) -> None\n\n"
             "Decode and scatter chunks into `out` (see kernel.py). Tasks are taken from the shared int64\n"
             "`counter` until none is left; `status[i]` (int32) receives each task's result code.");

static PyObject *read_chunks(PyObject *self, PyObject *args) {
    PyObject *sources, *outobj, *shapeobj;
    Py_buffer tasks, counter, status, out;
    int codec;
    if (!PyArg_ParseTuple(args, "Oy*w*w*OOi", &sources, &tasks, &counter, &status, &outobj, &shapeobj, &codec))
        return NULL;
    PyObject *ret = NULL;
    source *srcs = NULL;
    Py_ssize_t nsrc = 0;
    int have_out = 0;
    read_geo g;
    memset(&g, 0, sizeof g);
    if (check_codec(codec) < 0 || parse_shape(shapeobj, g.cshape, &g.ndim) < 0) goto done;
    if (PyObject_GetBuffer(outobj, &out, PyBUF_WRITABLE | PyBUF_STRIDES | PyBUF_FORMAT) < 0) goto done;
    have_out = 1;
    if (out.ndim != g.ndim) {
        PyErr_SetString(PyExc_ValueError, "out must have the chunks' number of dimensions");
        goto done;
    }
    g.codec = codec;
    g.isz = (size_t)out.itemsize;
    g.out = (char *)out.buf;
    size_t stride = g.isz;
    for (int d = g.ndim - 1; d >= 0; d--) {
        g.cstride[d] = (int64_t)stride;
        stride *= (size_t)g.cshape[d];
        g.oshape[d] = out.shape[d];
        g.ostride[d] = out.strides[d];
    }
    g.expected = stride;
    const Py_ssize_t rec = 3 + 4 * g.ndim;
    if (tasks.len % (rec * (Py_ssize_t)sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "tasks has the wrong size");
        goto done;
    }
    const Py_ssize_t n = tasks.len / (rec * (Py_ssize_t)sizeof(int64_t));
    if (status.len < n * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "status is too small");
        goto done;
    }
    int64_t *next = counter_ptr(&counter);
    if (!next) goto done;
    srcs = acquire_sources(sources, &nsrc);
    if (!srcs) goto done;
    const int64_t *tk = (const int64_t *)tasks.buf;
    int32_t *stat = (int32_t *)status.buf;
    Py_BEGIN_ALLOW_THREADS for (;;) {
        int64_t i = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
        if (i >= n) break;
        stat[i] = read_task(&g, srcs, nsrc, tk + i * rec);
    }
    Py_END_ALLOW_THREADS ret = Py_None;
    Py_INCREF(ret);
done:
    if (srcs) release_sources(srcs, nsrc);
    if (have_out) PyBuffer_Release(&out);
    PyBuffer_Release(&tasks);
    PyBuffer_Release(&counter);
    PyBuffer_Release(&status);
    return ret;
}

/* --- writes ---------------------------------------------------------------------------------------------- */
#define FILL_NONE 0
#define FILL_BYTES 1
#define FILL_F4 2
#define FILL_F8 3

typedef struct {
    int ndim;
    size_t isz;
    size_t expected;
    int64_t cshape[MAXDIM];
    int64_t cstride[MAXDIM];
    int fill_mode;
    const char *fill; /* isz bytes */
} write_geo;

/* Whether each of the k floating-point values at buf equals the fill value at fill (NaN matches a NaN
 * fill): one definition per type T. */
#define DEFINE_ALL_FILL(name, T)                                                                    \
    static int name(const char *buf, size_t k, const char *fill) {                                  \
        T fv;                                                                                       \
        memcpy(&fv, fill, sizeof fv);                                                               \
        for (size_t i = 0; i < k; i++) {                                                            \
            T v;                                                                                    \
            memcpy(&v, buf + sizeof v * i, sizeof v);                                               \
            if (fv != fv ? v == v : v != fv) return 0;                                              \
        }                                                                                           \
        return 1;                                                                                   \
    }
DEFINE_ALL_FILL(all_fill_float, float)
DEFINE_ALL_FILL(all_fill_double, double)

/* Whether every element of the contiguous buffer equals the fill value (value semantics of
 * ChunkCodec.is_fill for the dtypes the wrapper sends: bytes for integers and booleans, == for
 * float32/float64 with NaN matching a NaN fill). */
static int is_fill(const write_geo *g, const char *buf) {
    const size_t n = g->expected;
    if (g->fill_mode == FILL_BYTES) {
        if (memcmp(buf, g->fill, g->isz)) return 0;
        return n <= g->isz || memcmp(buf, buf + g->isz, n - g->isz) == 0;
    }
    if (g->fill_mode == FILL_F4) return all_fill_float(buf, n / sizeof(float), g->fill);
    if (g->fill_mode == FILL_F8) return all_fill_double(buf, n / sizeof(double), g->fill);
    return 0;
}

/* The chunk in `v` (of at most the chunk's shape, any strides) laid out as one whole C-ordered chunk in
 * `dst`, edge chunks padded with the fill value; returns a status. */
static int gather(const write_geo *g, const Py_buffer *v, char *dst) {
    if (v->ndim != g->ndim || (size_t)v->itemsize != g->isz) return ST_BAD_TASK;
    int whole = 1;
    for (int d = 0; d < g->ndim; d++) {
        if (v->shape[d] < 1 || v->shape[d] > g->cshape[d]) return ST_BAD_TASK;
        if (v->shape[d] != g->cshape[d]) whole = 0;
    }
    if (!whole) { /* an edge chunk: the part outside the array is the fill value */
        for (size_t k = 0; k < g->expected; k += g->isz) memcpy(dst + k, g->fill, g->isz);
    }
    int64_t count[MAXDIM], sstr[MAXDIM];
    for (int d = 0; d < g->ndim; d++) {
        count[d] = v->shape[d];
        sstr[d] = v->strides ? v->strides[d] : 0;
    }
    if (!v->strides) { /* C-contiguous export without strides */
        int64_t s = (int64_t)g->isz;
        for (int d = g->ndim - 1; d >= 0; d--) {
            sstr[d] = s;
            s *= v->shape[d];
        }
    }
    copy_nd(g->ndim, count, g->isz, (const char *)v->buf, sstr, dst, g->cstride);
    return ST_OK;
}

/* The chunk's layout and fill value in `g` (shape, item size, C strides, size; the fill value's bytes and
 * test); -1 with an exception set when they do not make sense. */
static int chunk_geometry(write_geo *g, PyObject *shapeobj, Py_ssize_t itemsize, const Py_buffer *fill,
                          int fill_mode) {
    if (parse_shape(shapeobj, g->cshape, &g->ndim) < 0) return -1;
    if (itemsize < 1 || fill->len != itemsize || fill_mode < FILL_NONE || fill_mode > FILL_F8 ||
        (fill_mode == FILL_F4 && itemsize != 4) || (fill_mode == FILL_F8 && itemsize != 8)) {
        PyErr_SetString(PyExc_ValueError, "bad item size, fill value or fill test");
        return -1;
    }
    g->isz = (size_t)itemsize;
    g->fill_mode = fill_mode;
    g->fill = (const char *)fill->buf;
    size_t stride = g->isz;
    for (int d = g->ndim - 1; d >= 0; d--) {
        g->cstride[d] = (int64_t)stride;
        stride *= (size_t)g->cshape[d];
    }
    g->expected = stride;
    return 0;
}

PyDoc_STRVAR(gather_chunk_doc,
             "gather_chunk(array, out, chunk_shape, fill, fill_mode) -> bool\n\n"
             "Lay `array` (at most the chunk's shape, any strides) out in the C-contiguous buffer `out` of one\n"
             "chunk, edge chunks padded with `fill`; True when every element equals the fill value (fill_mode),\n"
             "GIL released. ValueError for an array that does not fit the chunk.");

static PyObject *gather_chunk(PyObject *self, PyObject *args) {
    PyObject *array, *shapeobj;
    Py_buffer out, fill, view;
    int fill_mode;
    if (!PyArg_ParseTuple(args, "Ow*Oy*i", &array, &out, &shapeobj, &fill, &fill_mode)) return NULL;
    PyObject *ret = NULL;
    int have_view = 0;
    write_geo g;
    memset(&g, 0, sizeof g);
    if (chunk_geometry(&g, shapeobj, fill.len, &fill, fill_mode) < 0) goto done;
    if (out.len != (Py_ssize_t)g.expected) {
        PyErr_SetString(PyExc_ValueError, "out must hold exactly one chunk");
        goto done;
    }
    if (PyObject_GetBuffer(array, &view, PyBUF_STRIDES) < 0) goto done;
    have_view = 1;
    int st, all_fill = 0;
    Py_BEGIN_ALLOW_THREADS
    st = gather(&g, &view, (char *)out.buf);
    if (st == ST_OK && g.fill_mode != FILL_NONE) all_fill = is_fill(&g, (const char *)out.buf);
    Py_END_ALLOW_THREADS
    if (st != ST_OK) {
        PyErr_Format(PyExc_ValueError, "the array does not fit the chunk (status %d)", st);
        goto done;
    }
    ret = PyBool_FromLong(all_fill);
done:
    if (have_view) PyBuffer_Release(&view);
    PyBuffer_Release(&out);
    PyBuffer_Release(&fill);
    return ret;
}

/* --- blosc for the Python path (altarr.codecs.compress.BloscCodec) ------------------------------------- */
PyDoc_STRVAR(blosc_nbytes_doc, "blosc_nbytes(frame) -> int | None\n\n"
                               "The decoded size of a blosc 1 frame, or None when its header does not check out.");

static PyObject *py_blosc_nbytes(PyObject *self, PyObject *arg) {
    Py_buffer src;
    if (PyObject_GetBuffer(arg, &src, PyBUF_SIMPLE) < 0) return NULL;
    size_t nbytes = 0;
    int bad = src.len < BLOSC_MIN_HEADER_LENGTH || blosc_cbuffer_validate(src.buf, (size_t)src.len, &nbytes) != 0;
    PyBuffer_Release(&src);
    if (bad) Py_RETURN_NONE;
    return PyLong_FromSize_t(nbytes);
}

PyDoc_STRVAR(decompress_doc,
             "decompress(codec, frame, out) -> bool\n\n"
             "Decode a zstd (codec 1, this thread's context) or blosc 1 (2) frame into the writable buffer `out`\n"
             "(GIL released); False when it is not valid or not exactly len(out) bytes (`out` may be written).");

static PyObject *py_decompress(PyObject *self, PyObject *args) {
    Py_buffer src, out;
    int codec, st = ST_NO_MEMORY;
    if (!PyArg_ParseTuple(args, "iy*w*", &codec, &src, &out)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    tstate *t = get_tstate();
    if (t) st = decode(codec, t, src.buf, (size_t)src.len, out.buf, (size_t)out.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    PyBuffer_Release(&out);
    return PyBool_FromLong(st == ST_OK);
}

PyDoc_STRVAR(blosc_compress_doc,
             "blosc_compress(data, out, clevel, shuffle, typesize, cname, blocksize) -> int\n\n"
             "One blosc 1 frame of `data` written into the writable buffer `out` (one thread, GIL released);\n"
             "returns its size. ValueError when blosc refuses (an unknown compressor, `out` too small).");

static PyObject *py_blosc_compress(PyObject *self, PyObject *args) {
    Py_buffer src, out;
    int clevel, shuffle;
    Py_ssize_t typesize, blocksize;
    const char *cname;
    if (!PyArg_ParseTuple(args, "y*w*iinsn", &src, &out, &clevel, &shuffle, &typesize, &cname, &blocksize))
        return NULL;
    int r = -1;
    if (typesize >= 1 && blocksize >= 0) {
        Py_BEGIN_ALLOW_THREADS
        r = blosc_compress_ctx(clevel, shuffle, (size_t)typesize, (size_t)src.len, src.buf, out.buf, (size_t)out.len,
                               cname, (size_t)blocksize, 1);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&out);
    if (r <= 0) return PyErr_Format(PyExc_ValueError, "blosc_compress_ctx failed (code %d)", r);
    return PyLong_FromLong(r);
}

static PyMethodDef methods[] = {
    {"read_chunks", read_chunks, METH_VARARGS, read_chunks_doc},
    {"blosc_nbytes", py_blosc_nbytes, METH_O, blosc_nbytes_doc},
    {"decompress", py_decompress, METH_VARARGS, decompress_doc},
    {"blosc_compress", py_blosc_compress, METH_VARARGS, blosc_compress_doc},
    {"gather_chunk", gather_chunk, METH_VARARGS, gather_chunk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "altarr's native kernel (see altarr.native and altarr.dataset.kernel).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    /* the libraries' versions at run time (the shared objects loaded may be newer than the headers) */
    if (PyModule_AddIntConstant(m, "MAXDIM", MAXDIM) < 0 ||
        PyModule_AddStringConstant(m, "ZSTD_VERSION", ZSTD_versionString()) < 0 ||
        PyModule_AddStringConstant(m, "BLOSC_VERSION", blosc_get_version_string()) < 0 ||
        PyModule_AddIntConstant(m, "BLOSC_MAX_OVERHEAD", BLOSC_MAX_OVERHEAD) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
