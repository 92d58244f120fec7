// Implementations of CJPEG.h: libjpeg-turbo's decompressor with a setjmp error handler.
#include "CJPEG.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

struct CJPEG_decoder {
    struct jpeg_decompress_struct info;
    struct jpeg_error_mgr errors;
    jmp_buf escape;
    char error_text[JMSG_LENGTH_MAX];
    uint8_t *scratch;       /* one row, for a picture wider than the destination */
    size_t scratch_bytes;
};

static void cjpeg_error_exit(j_common_ptr info) {
    CJPEG_decoder *decoder = (CJPEG_decoder *)info->client_data;
    (*info->err->format_message)(info, decoder->error_text);
    longjmp(decoder->escape, 1);
}

/* Warnings (corrupt data, a truncated frame) are counted by libjpeg in num_warnings; nothing is printed. */
static void cjpeg_emit_message(j_common_ptr info, int level) {
    if (level < 0) info->err->num_warnings++;
}

CJPEG_decoder *CJPEG_decoder_new(void) {
    CJPEG_decoder *decoder = calloc(1, sizeof(*decoder));
    if (decoder == NULL) return NULL;
    decoder->info.err = jpeg_std_error(&decoder->errors);
    decoder->errors.error_exit = cjpeg_error_exit;
    decoder->errors.emit_message = cjpeg_emit_message;
    decoder->info.client_data = decoder;
    if (setjmp(decoder->escape)) {
        free(decoder);
        return NULL;
    }
    jpeg_create_decompress(&decoder->info);
    return decoder;
}

void CJPEG_decoder_free(CJPEG_decoder *decoder) {
    if (decoder == NULL) return;
    jpeg_destroy_decompress(&decoder->info);
    free(decoder->scratch);
    free(decoder);
}

const char *CJPEG_decoder_error(const CJPEG_decoder *decoder) { return decoder->error_text; }

int CJPEG_decode_bgrx(CJPEG_decoder *decoder, const uint8_t *jpeg, size_t size, uint32_t width, uint32_t height,
                      uint8_t *destination, size_t stride, uint32_t max_width, uint32_t max_height) {
    struct jpeg_decompress_struct *info = &decoder->info;
    decoder->error_text[0] = '\0';
    if (size < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) {
        snprintf(decoder->error_text, sizeof(decoder->error_text), "not a JPEG (no start-of-image marker)");
        return -1;
    }
    if (setjmp(decoder->escape)) {
        jpeg_abort_decompress(info);
        return -1;
    }
    decoder->errors.num_warnings = 0;
    jpeg_mem_src(info, jpeg, (unsigned long)size);
    jpeg_read_header(info, TRUE);
    if (info->image_width != width || info->image_height != height) {
        snprintf(decoder->error_text, sizeof(decoder->error_text), "a %ux%u JPEG where %ux%u was negotiated",
                 info->image_width, info->image_height, width, height);
        jpeg_abort_decompress(info);
        return -1;
    }
    info->out_color_space = JCS_EXT_BGRX;
    jpeg_start_decompress(info);
    uint32_t rows = info->output_height < max_height ? info->output_height : max_height;
    int crop = info->output_width > max_width;
    size_t row_bytes = (size_t)info->output_width * 4;
    if (crop && decoder->scratch_bytes < row_bytes) {
        free(decoder->scratch);
        decoder->scratch = malloc(row_bytes);
        decoder->scratch_bytes = decoder->scratch ? row_bytes : 0;
        if (decoder->scratch == NULL) {
            snprintf(decoder->error_text, sizeof(decoder->error_text), "out of memory");
            jpeg_abort_decompress(info);
            return -1;
        }
    }
    while (info->output_scanline < rows) {
        uint8_t *row = destination + (size_t)info->output_scanline * stride;
        JSAMPROW target = crop ? decoder->scratch : row;
        if (jpeg_read_scanlines(info, &target, 1) != 1) break;
        if (crop) memcpy(row, decoder->scratch, (size_t)max_width * 4);
    }
    /* The rows past max_height are not decoded: abort rather than finish (finish would read them). */
    if (info->output_scanline < info->output_height) {
        jpeg_abort_decompress(info);
    } else {
        jpeg_finish_decompress(info);
    }
    if (decoder->errors.num_warnings > 0) {
        snprintf(decoder->error_text, sizeof(decoder->error_text), "corrupt JPEG data (%ld warnings)",
                 decoder->errors.num_warnings);
        return -2;
    }
    return 0;
}
