/*
 * Sharding pictures, drawn: text and Markdown (a character map and one
 * line per block) and a standalone SVG. Integers only, so the bytes never
 * depend on the locale or the compiler.
 */
#include "picture.h"
#include "svg.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Blocks are named A..Z, a..z; past 52 blocks by number (#53) and the
 * maps are left out. */
#define PICTURE_MAX_LETTERS 52
/* The character map is drawn up to this size (per panel). */
#define MAP_MAX_ROWS 16
#define MAP_MAX_COLS 32

const struct tps_picture_style tps_picture_styles[TPS_PICTURE_KINDS] = {
	[TPS_PICTURE_SHARD] = {"shard", "#e6eef8", "#0b5cad",
			       "a block of the tensor that only the ranks "
			       "listed hold"},
	[TPS_PICTURE_REPLICATE] = {"replicate", "#eef5ee", "#2f6b3a",
				   "every rank listed holds the same copy of "
				   "its block"},
	[TPS_PICTURE_PARTIAL] = {"partial sum", "#fff3ea", "#b8560b",
				 "every rank listed holds a full-size addend "
				 "(a name ending in +, A+), and the block's "
				 "value is their sum over the group"},
};
_Static_assert(TPS_PICTURE_PARTIAL + 1 == TPS_PICTURE_KINDS,
	       "a style for every kind");

/* The placement kind each picture kind stands for. */
static const enum tps_placement_kind placement_of_kind[TPS_PICTURE_KINDS] = {
	[TPS_PICTURE_SHARD] = TPS_PLACEMENT_SHARD,
	[TPS_PICTURE_REPLICATE] = TPS_PLACEMENT_REPLICATE,
	[TPS_PICTURE_PARTIAL] = TPS_PLACEMENT_PARTIAL,
};

static bool mesh_dim_partial(const struct tps_picture *pic, int i)
{
	return pic->placements[i].kind == TPS_PLACEMENT_PARTIAL &&
	       pic->mesh.shape[i] > 1;
}

/* A partial sum over a group of more than one rank. */
static bool is_partial(const struct tps_picture *pic)
{
	for (int i = 0; i < pic->mesh.ndim; i++) {
		if (mesh_dim_partial(pic, i)) {
			return true;
		}
	}
	return false;
}

/* The names of the mesh dims (of size > 1) with this kind of placement,
 * ", "-separated; "" when none. */
static char *dims_of_kind(const struct tps_picture *pic,
			  enum tps_placement_kind kind, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < pic->mesh.ndim && used < size; i++) {
		if (pic->placements[i].kind == kind && pic->mesh.shape[i] > 1) {
			int n = snprintf(buf + used, size - used, "%s%s",
					 used ? ", " : "",
					 pic->mesh.dim_names[i]);
			used += n > 0 ? (size_t)n : 0;
		}
	}
	return buf;
}

static char *block_name(const struct tps_picture *pic, int b, char *buf,
			size_t size)
{
	const char *plus = is_partial(pic) ? "+" : "";
	if (pic->n_blocks <= PICTURE_MAX_LETTERS) {
		snprintf(buf, size, "%c%s", b < 26 ? 'A' + b : 'a' + (b - 26),
			 plus);
	} else {
		snprintf(buf, size, "#%d%s", b + 1, plus);
	}
	return buf;
}

/* Appends to buf[*used..size), keeping it NUL-terminated. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (*used >= size) {
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	*used += n > 0 ? (size_t)n : 0;
	if (*used >= size) {
		*used = size - 1;
	}
}

/* "rows 0-3", "row 2", "rows none": inclusive index ranges, as people
 * count them. */
static void append_range(char *buf, size_t size, size_t *used, const char *one,
			 const char *many, int64_t offset, int64_t length)
{
	if (length == 0) {
		append(buf, size, used, "%s none", many);
	} else if (length == 1) {
		append(buf, size, used, "%s %lld", one, (long long)offset);
	} else {
		append(buf, size, used, "%s %lld-%lld", many, (long long)offset,
		       (long long)(offset + length - 1));
	}
}

/* The index ranges of a block (or, with leading_only, of a panel):
 * "dim0 0-1, rows 0-3, cols 0-7"; a 1-D tensor counts elements. */
static void append_ranges(char *buf, size_t size, size_t *used,
			  const struct tps_picture *pic, const int64_t *offset,
			  const int64_t *length, bool leading_only)
{
	int n = pic->global.ndim;
	int lead = n > 2 ? n - 2 : 0;
	for (int d = 0; d < lead; d++) {
		char word[16];
		snprintf(word, sizeof word, "dim%d", d);
		append(buf, size, used, "%s", d ? ", " : "");
		append_range(buf, size, used, word, word, offset[d], length[d]);
	}
	if (leading_only) {
		return;
	}
	if (n == 0) {
		append(buf, size, used, "the scalar");
	} else if (n == 1) {
		append_range(buf, size, used, "element", "elements", offset[0],
			     length[0]);
	} else {
		append(buf, size, used, "%s", lead ? ", " : "");
		append_range(buf, size, used, "row", "rows", offset[n - 2],
			     length[n - 2]);
		append(buf, size, used, ", ");
		append_range(buf, size, used, "col", "cols", offset[n - 1],
			     length[n - 1]);
	}
}

/* "rank 3", "ranks 0,2", "ranks 0-3,6": runs of three or more as a-b. */
static void append_ranks(char *buf, size_t size, size_t *used,
			 const struct tps_picture *pic,
			 const struct tps_picture_block *blk)
{
	const int *r = pic->ranks + blk->first;
	append(buf, size, used, "rank%s ", blk->n_ranks == 1 ? "" : "s");
	for (int i = 0; i < blk->n_ranks;) {
		int j = i;
		while (j + 1 < blk->n_ranks && r[j + 1] == r[j] + 1) {
			j++;
		}
		append(buf, size, used, "%s", i ? "," : "");
		if (j - i >= 2) {
			append(buf, size, used, "%d-%d", r[i], r[j]);
			i = j + 1;
		} else {
			append(buf, size, used, "%d", r[i]);
			i++;
		}
	}
}

/*
 * One block's line: "rows 0-1, cols 0-3: ranks 0,2 (tp=0; replicated over
 * dp)". Shard mesh dims give the coordinate, replicate dims copies, partial
 * dims addends; an empty block ends in ": empty, a (0, 8) shard".
 */
static char *block_label(const struct tps_picture *pic, int b, char *buf,
			 size_t size)
{
	const struct tps_picture_block *blk = &pic->blocks[b];
	char dims[4 * TPS_MESH_NAME_MAX + 8];
	size_t used = 0;
	bool open = false;

	buf[0] = '\0';
	append_ranges(buf, size, &used, pic, blk->offset, blk->length, false);
	append(buf, size, &used, ": ");
	append_ranks(buf, size, &used, pic, blk);
	for (int i = 0; i < pic->mesh.ndim; i++) {
		if (blk->coord[i] >= 0) {
			append(buf, size, &used, "%s%s=%d", open ? ", " : " (",
			       pic->mesh.dim_names[i], blk->coord[i]);
			open = true;
		}
	}
	if (dims_of_kind(pic, TPS_PLACEMENT_PARTIAL, dims, sizeof dims)[0]) {
		append(buf, size, &used, "%spartial sum over %s",
		       open ? "; " : " (", dims);
		open = true;
	}
	if (dims_of_kind(pic, TPS_PLACEMENT_REPLICATE, dims, sizeof dims)[0]) {
		append(buf, size, &used, "%sreplicated over %s",
		       open ? "; " : " (", dims);
		open = true;
	}
	append(buf, size, &used, "%s", open ? ")" : "");
	if (blk->empty) {
		struct tps_shape s =
			tps_shape_make(pic->global.ndim, blk->length);
		char shape[96];
		append(buf, size, &used, ": empty, a %s shard",
		       tps_shape_format(&s, shape, sizeof shape));
	}
	return buf;
}

/* The event line: "[0] distribute: global (4, 4), placements
 * [replicate, shard(0)] on mesh (2, 2) named (dp, tp)". */
static char *describe(const struct tps_picture *pic, char *buf, size_t size)
{
	char shape[96], p[32];
	size_t used = 0;
	buf[0] = '\0';
	append(buf, size, &used, "[%lld] %s: global %s, placements [", pic->seq,
	       pic->op, tps_shape_format(&pic->global, shape, sizeof shape));
	for (int i = 0; i < pic->mesh.ndim; i++) {
		append(buf, size, &used, "%s%s", i ? ", " : "",
		       tps_placement_format(pic->placements[i], p, sizeof p));
	}
	append(buf, size, &used, "] on mesh (");
	for (int i = 0; i < pic->mesh.ndim; i++) {
		append(buf, size, &used, "%s%d", i ? ", " : "",
		       pic->mesh.shape[i]);
	}
	append(buf, size, &used, ") named (");
	for (int i = 0; i < pic->mesh.ndim; i++) {
		append(buf, size, &used, "%s%s", i ? ", " : "",
		       pic->mesh.dim_names[i]);
	}
	append(buf, size, &used, ")");
	return buf;
}

/* Rows and columns drawn: the last two dims; a 1-D tensor is one row and
 * a 0-D one a single cell. */
static int64_t drawn_rows(const struct tps_shape *s)
{
	return s->ndim >= 2 ? s->dim[s->ndim - 2] : 1;
}

static int64_t drawn_cols(const struct tps_shape *s)
{
	return s->ndim >= 1 ? s->dim[s->ndim - 1] : 1;
}

/* A block's drawn extent: [row0, row0 + rows) x [col0, col0 + cols). */
static void drawn_region(const struct tps_picture *pic,
			 const struct tps_picture_block *blk, int64_t *row0,
			 int64_t *rows, int64_t *col0, int64_t *cols)
{
	int n = pic->global.ndim;
	*row0 = n >= 2 ? blk->offset[n - 2] : 0;
	*rows = n >= 2 ? blk->length[n - 2] : 1;
	*col0 = n >= 1 ? blk->offset[n - 1] : 0;
	*cols = n >= 1 ? blk->length[n - 1] : 1;
}

static bool map_fits(const struct tps_picture *pic)
{
	return pic->n_blocks <= PICTURE_MAX_LETTERS &&
	       drawn_rows(&pic->global) <= MAP_MAX_ROWS &&
	       drawn_cols(&pic->global) <= MAP_MAX_COLS;
}

/* Markdown shows text literally with these escaped (as explain does). */
static void put_text(FILE *out, const char *s, bool md)
{
	for (; *s; s++) {
		if (md && strchr("\\`*_{}[]<>#|~", *s)) {
			fputc('\\', out);
		}
		fputc(*s, out);
	}
}

/* One panel's character map: each cell its block's name. */
static void write_map(FILE *out, const struct tps_picture *pic, int panel,
		      const char *indent)
{
	int64_t rows = drawn_rows(&pic->global),
		cols = drawn_cols(&pic->global);
	int n = pic->global.ndim;
	const char *axis = n == 1 ? "element:" : "col:";
	char label[32];
	int width = (int)strlen(axis);

	if (n >= 2) {
		int w = snprintf(label, sizeof label,
				 "row %lld:", (long long)(rows - 1));
		width = w > width ? w : width;
	}
	if (n >= 1) {
		fprintf(out, "%s%*s", indent, width, axis);
		for (int64_t c = 0; c < cols; c++) {
			fprintf(out, "%3lld", (long long)c);
		}
		fputc('\n', out);
	}
	for (int64_t r = 0; r < rows; r++) {
		if (n >= 2) {
			snprintf(label, sizeof label,
				 "row %lld:", (long long)r);
		} else {
			label[0] = '\0';
		}
		fprintf(out, "%s%*s", indent, width, label);
		for (int64_t c = 0; c < cols; c++) {
			char name[16] = "";
			for (int b = 0; b < pic->n_blocks; b++) {
				const struct tps_picture_block *blk =
					&pic->blocks[b];
				int64_t r0, nr, c0, nc;
				drawn_region(pic, blk, &r0, &nr, &c0, &nc);
				if (blk->panel == panel && r >= r0 &&
				    r < r0 + nr && c >= c0 && c < c0 + nc) {
					block_name(pic, b, name, sizeof name);
				}
			}
			fprintf(out, "%3s", name);
		}
		fputc('\n', out);
	}
}

/* The picture's kind (picture.h): how its blocks are drawn. */
static enum tps_picture_kind picture_kind(const struct tps_picture *pic)
{
	return is_partial(pic)	   ? TPS_PICTURE_PARTIAL
	       : pic->n_blocks > 1 ? TPS_PICTURE_SHARD
				   : TPS_PICTURE_REPLICATE;
}

/* The legend's line for one kind, "shard over tp: a block of ..."
 * (without the full stop), into buf; "" when the picture has no mesh dim
 * of that kind. */
static const char *legend_line(const struct tps_picture *pic,
			       enum tps_picture_kind kind, char *buf,
			       size_t size)
{
	char dims[4 * TPS_MESH_NAME_MAX + 8];
	if (!dims_of_kind(pic, placement_of_kind[kind], dims, sizeof dims)[0]) {
		buf[0] = '\0';
	} else {
		snprintf(buf, size, "%s over %s: %s",
			 tps_picture_styles[kind].name, dims,
			 tps_picture_styles[kind].legend);
	}
	return buf;
}

/* What the marks mean, for the kinds this picture has (a partial picture
 * never speaks of copies, and a replicated one never of addends). */
static int write_legend(FILE *out, const struct tps_picture *pic, bool md,
			const char *indent)
{
	char line[512];
	int lines = 0;
	for (int k = 0; k < TPS_PICTURE_KINDS; k++) {
		if (legend_line(pic, (enum tps_picture_kind)k, line,
				sizeof line)[0]) {
			lines++;
			fprintf(out, "%s", indent);
			put_text(out, line, md);
			put_text(out, ".\n", md);
		}
	}
	if (pic->sampler_order) {
		lines++;
		fprintf(out, "%s", indent);
		put_text(out,
			 "Rows count positions in DistributedSampler's "
			 "order: dp rank r holds samples r, r + dp, r + 2 dp, "
			 "...\n",
			 md);
	}
	return lines;
}

void tps_picture_write_text(FILE *out, const struct tps_picture *pic, bool md)
{
	const char *indent = md ? "" : "          ";
	char line[2048], name[16];
	int lead = pic->global.ndim > 2 ? pic->global.ndim - 2 : 0;

	if (md) {
		fputs("Sharding of `", out);
		put_text(out, pic->tensor, false);
		fprintf(out, "`, %d block%s:\n\n", pic->n_blocks,
			pic->n_blocks == 1 ? "" : "s");
	} else {
		fprintf(out, "        sharding of %s, %d block%s:\n",
			pic->tensor, pic->n_blocks,
			pic->n_blocks == 1 ? "" : "s");
	}
	if (map_fits(pic) && pic->n_panels > 0) {
		fputs(md ? "```text\n" : "", out);
		for (int q = 0; q < pic->n_panels; q++) {
			if (lead) {
				size_t used = 0;
				line[0] = '\0';
				append_ranges(line, sizeof line, &used, pic,
					      pic->panels[q].offset,
					      pic->panels[q].length, true);
				fprintf(out, "%s%s:\n", indent, line);
			}
			write_map(out, pic, q, indent);
		}
		fputs(md ? "```\n\n" : "", out);
	} else if (pic->n_panels > 0) {
		fprintf(out, "%s", indent);
		fprintf(out,
			"(no map past 16 rows, 32 columns or 52 blocks; %s "
			"draws an SVG)\n",
			md ? "`tpsim picture`" : "tpsim picture");
		fputs(md ? "\n" : "", out);
	}
	for (int b = 0; b < pic->n_blocks; b++) {
		block_name(pic, b, name, sizeof name);
		if (md) {
			fprintf(out, "- **%s** ", name);
			put_text(out, block_label(pic, b, line, sizeof line),
				 true);
			fputc('\n', out);
		} else {
			fprintf(out, "%s%-3s %s\n", indent, name,
				block_label(pic, b, line, sizeof line));
		}
	}
	fputs(md ? "\n" : "", out);
	if (write_legend(out, pic, md, indent) > 0 && md) {
		fputc('\n', out);
	}
}

/* ---- SVG -------------------------------------------------------------- */

#define SVG_MARGIN    16
#define SVG_GRID_MAX  480 /* the longest side of a panel's grid, px */
#define SVG_CELL_MAX  48  /* the largest element cell, px */
#define SVG_CHAR_W    TPS_SVG_CHAR_W
#define SVG_LINE_H    22
#define SVG_PANEL_GAP 32

/* The grid side for n elements: whole cells of up to 48px while they
 * fit in 480px, else 480px with elements at i * 480 / n. */
static int64_t grid_side(int64_t n)
{
	int64_t cell;
	if (n <= 0) {
		return 0;
	}
	if (n > SVG_GRID_MAX) {
		return SVG_GRID_MAX;
	}
	cell = SVG_GRID_MAX / n;
	return n * (cell < SVG_CELL_MAX ? cell : SVG_CELL_MAX);
}

/* Pixel position of element boundary i along an axis of n elements. */
static int64_t px(int64_t i, int64_t n)
{
	return n > 0 ? i * grid_side(n) / n : 0;
}

/* A white box of the text's width, centred on cx, from y down h px. */
static void svg_text_box(FILE *out, int64_t cx, int64_t y, const char *text,
			 int64_t h)
{
	int64_t w = tps_svg_text_width(text, SVG_CHAR_W) + 4;
	fprintf(out,
		"<rect x=\"%lld\" y=\"%lld\" width=\"%lld\" height=\"%lld\" "
		"fill=\"#ffffff\"/>\n",
		(long long)(cx - w / 2), (long long)y, (long long)w,
		(long long)h);
}

/* A swatch or a block: filled, hatched and dashed when partial. */
static void svg_box(FILE *out, int64_t x, int64_t y, int64_t w, int64_t h,
		    const char *fill, bool partial)
{
	fprintf(out,
		"<rect x=\"%lld\" y=\"%lld\" width=\"%lld\" height=\"%lld\" "
		"fill=\"%s\"/>\n",
		(long long)x, (long long)y, (long long)w, (long long)h, fill);
	if (partial) {
		fprintf(out,
			"<rect x=\"%lld\" y=\"%lld\" width=\"%lld\" "
			"height=\"%lld\" fill=\"url(#partial-hatch)\"/>\n",
			(long long)x, (long long)y, (long long)w, (long long)h);
	}
}

static void svg_border(FILE *out, int64_t x, int64_t y, int64_t w, int64_t h,
		       enum tps_picture_kind kind)
{
	fprintf(out,
		"<rect x=\"%lld\" y=\"%lld\" width=\"%lld\" height=\"%lld\" "
		"fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
		(long long)x, (long long)y, (long long)w, (long long)h,
		tps_picture_styles[kind].line,
		kind == TPS_PICTURE_PARTIAL ? " stroke-dasharray=\"6 3\"" : "");
}

/* White lines between the elements inside a block, while cells are at
 * least 8px (counting rows and columns is the point of the picture). */
static void svg_cell_lines(FILE *out, int64_t gx, int64_t gy, int64_t r0,
			   int64_t nr, int64_t c0, int64_t nc,
			   const struct tps_shape *g)
{
	int64_t rows = drawn_rows(g), cols = drawn_cols(g);
	bool first = true;
	if (grid_side(rows) < 8 * rows || grid_side(cols) < 8 * cols) {
		return;
	}
	for (int64_t c = c0 + 1; c < c0 + nc; c++) {
		fprintf(out, "%sM%lld %lldV%lld", first ? "<path d=\"" : " ",
			(long long)(gx + px(c, cols)),
			(long long)(gy + px(r0, rows)),
			(long long)(gy + px(r0 + nr, rows)));
		first = false;
	}
	for (int64_t r = r0 + 1; r < r0 + nr; r++) {
		fprintf(out, "%sM%lld %lldH%lld", first ? "<path d=\"" : " ",
			(long long)(gx + px(c0, cols)),
			(long long)(gy + px(r, rows)),
			(long long)(gx + px(c0 + nc, cols)));
		first = false;
	}
	if (!first) {
		fputs("\" stroke=\"#ffffff\" stroke-width=\"1\"/>\n", out);
	}
}

static void svg_block(FILE *out, const struct tps_picture *pic, int b,
		      int64_t gx, int64_t gy)
{
	const struct tps_picture_block *blk = &pic->blocks[b];
	int64_t rows = drawn_rows(&pic->global),
		cols = drawn_cols(&pic->global);
	int64_t r0, nr, c0, nc, x, y, w, h;
	char name[16], label[2048], ranks[1024];
	size_t used = 0;
	bool partial = is_partial(pic);

	drawn_region(pic, blk, &r0, &nr, &c0, &nc);
	x = gx + px(c0, cols);
	y = gy + px(r0, rows);
	w = gx + px(c0 + nc, cols) - x;
	h = gy + px(r0 + nr, rows) - y;
	block_name(pic, b, name, sizeof name);
	ranks[0] = '\0';
	append_ranks(ranks, sizeof ranks, &used, pic, blk);
	fputs("<g>\n<title>", out);
	tps_svg_put_xml(out, name);
	fputs(" ", out);
	tps_svg_put_xml(out, block_label(pic, b, label, sizeof label));
	fputs("</title>\n", out);
	svg_box(out, x, y, w, h, tps_picture_styles[picture_kind(pic)].fill,
		partial);
	svg_cell_lines(out, gx, gy, r0, nr, c0, nc, &pic->global);
	svg_border(out, x, y, w, h, picture_kind(pic));
	/* The name, and the ranks under it when they fit; on white in a
	 * partial block, so the hatching does not cross the letters. */
	if (h >= 40 && tps_svg_text_width(ranks, SVG_CHAR_W) <= w - 4) {
		if (partial) {
			svg_text_box(out, x + w / 2, y + h / 2 - 15, ranks, 30);
		}
		tps_svg_text(out, x + w / 2, y + h / 2 - 4,
			     " text-anchor=\"middle\" font-weight=\"bold\"",
			     name);
		tps_svg_text(out, x + w / 2, y + h / 2 + 12,
			     " text-anchor=\"middle\"", ranks);
	} else if (h >= 16 && tps_svg_text_width(name, SVG_CHAR_W) <= w - 4) {
		if (partial) {
			svg_text_box(out, x + w / 2, y + h / 2 - 7, name, 14);
		}
		tps_svg_text(out, x + w / 2, y + h / 2 + 4,
			     " text-anchor=\"middle\" font-weight=\"bold\"",
			     name);
	}
	fputs("</g>\n", out);
}

/* Column numbers above the grid, row numbers left of it. */
static void svg_ticks(FILE *out, int64_t gx, int64_t gy, int64_t rows,
		      int64_t cols, bool row_numbers)
{
	char n[24];
	for (int64_t c = 0; c < cols; c++) {
		snprintf(n, sizeof n, "%lld", (long long)c);
		tps_svg_text(out, gx + (px(c, cols) + px(c + 1, cols)) / 2,
			     gy - 6,
			     " text-anchor=\"middle\" font-size=\"10\" "
			     "fill=\"#555555\"",
			     n);
	}
	for (int64_t r = 0; row_numbers && r < rows; r++) {
		snprintf(n, sizeof n, "%lld", (long long)r);
		tps_svg_text(out, gx - 6,
			     gy + (px(r, rows) + px(r + 1, rows)) / 2 + 4,
			     " text-anchor=\"end\" font-size=\"10\" "
			     "fill=\"#555555\"",
			     n);
	}
}

/* One line under the grid: a swatch of the kind and the text; an empty
 * block's swatch is white. */
static void svg_key_line(FILE *out, int64_t y, enum tps_picture_kind kind,
			 bool empty, const char *text)
{
	svg_box(out, SVG_MARGIN, y, 16, 16,
		empty ? "#ffffff" : tps_picture_styles[kind].fill,
		kind == TPS_PICTURE_PARTIAL);
	svg_border(out, SVG_MARGIN, y, 16, 16, kind);
	tps_svg_text(out, SVG_MARGIN + 24, y + 12, "", text);
}

void tps_picture_write_svg(FILE *out, const struct tps_picture *pic)
{
	int64_t rows = drawn_rows(&pic->global),
		cols = drawn_cols(&pic->global);
	int64_t gw = grid_side(cols), gh = grid_side(rows);
	int lead = pic->global.ndim > 2 ? pic->global.ndim - 2 : 0;
	/* Row and column numbers beside cells of at least 16px. */
	bool ticks =
		pic->global.ndim >= 1 && gw >= 16 * cols && gh >= 16 * rows;
	int64_t gutter = ticks && pic->global.ndim >= 2 ? 32 : 0;
	int64_t grid_top = SVG_MARGIN + 52 + (lead ? 20 : 0) + (ticks ? 16 : 0);
	int64_t panel_w = gutter + gw;
	int64_t width = 0, height, y;
	char title[2048], line[2048], name[16];
	enum tps_picture_kind kind = picture_kind(pic);
	char legend[TPS_PICTURE_KINDS][512];
	static const char sampler_note[] =
		"Rows count positions in DistributedSampler's order: dp rank r "
		"holds samples r, r + dp, r + 2 dp, ...";
	int n_legend = 0;

	for (int k = 0; k < TPS_PICTURE_KINDS; k++) {
		if (legend_line(pic, (enum tps_picture_kind)k, legend[n_legend],
				sizeof legend[0])[0]) {
			n_legend++;
		}
	}

	snprintf(title, sizeof title, "Sharding of %s", pic->tensor);
	describe(pic, line, sizeof line);
	/* Width: the widest of the text lines and the panels side by side. */
	width = tps_svg_text_width(title, 9);
	width = tps_svg_text_width(line, SVG_CHAR_W) > width
			? tps_svg_text_width(line, SVG_CHAR_W)
			: width;
	{
		int64_t panels = pic->n_panels * panel_w +
				 (pic->n_panels > 1 ? pic->n_panels - 1 : 0) *
					 SVG_PANEL_GAP;
		width = panels > width ? panels : width;
	}
	for (int b = 0; b < pic->n_blocks; b++) {
		char label[2048], full[2100];
		block_name(pic, b, name, sizeof name);
		snprintf(full, sizeof full, "%-3s %s", name,
			 block_label(pic, b, label, sizeof label));
		if (24 + tps_svg_text_width(full, SVG_CHAR_W) > width) {
			width = 24 + tps_svg_text_width(full, SVG_CHAR_W);
		}
	}
	for (int i = 0; i < n_legend; i++) {
		if (24 + tps_svg_text_width(legend[i], SVG_CHAR_W) > width) {
			width = 24 + tps_svg_text_width(legend[i], SVG_CHAR_W);
		}
	}
	if (pic->sampler_order &&
	    tps_svg_text_width(sampler_note, SVG_CHAR_W) > width) {
		width = tps_svg_text_width(sampler_note, SVG_CHAR_W);
	}
	width += 2 * SVG_MARGIN;
	height = grid_top + (pic->n_panels ? gh : 0) + 24 +
		 pic->n_blocks * SVG_LINE_H + 12 + 20 + n_legend * SVG_LINE_H +
		 (pic->sampler_order ? SVG_LINE_H : 0) + SVG_MARGIN;

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%lld\" height=\"%lld\" viewBox=\"0 0 %lld %lld\" "
		"font-family=\"monospace\" font-size=\"12\">\n<title>",
		(long long)width, (long long)height, (long long)width,
		(long long)height);
	tps_svg_put_xml(out, title);
	fputs("</title>\n<desc>", out);
	tps_svg_put_xml(out, line);
	fputs("</desc>\n", out);
	fprintf(out,
		"<defs>\n<pattern id=\"partial-hatch\" width=\"8\" "
		"height=\"8\" patternUnits=\"userSpaceOnUse\" "
		"patternTransform=\"rotate(45)\">\n"
		"<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"%s\" "
		"stroke-width=\"2\"/>\n</pattern>\n"
		"</defs>\n",
		tps_picture_styles[TPS_PICTURE_PARTIAL].line);
	fprintf(out,
		"<rect x=\"0\" y=\"0\" width=\"%lld\" height=\"%lld\" "
		"fill=\"#ffffff\"/>\n",
		(long long)width, (long long)height);
	tps_svg_text(out, SVG_MARGIN, SVG_MARGIN + 14,
		     " font-size=\"14\" font-weight=\"bold\"", title);
	tps_svg_text(out, SVG_MARGIN, SVG_MARGIN + 36, "", line);

	for (int q = 0; q < pic->n_panels; q++) {
		int64_t gx =
			SVG_MARGIN + gutter + q * (panel_w + SVG_PANEL_GAP);
		if (ticks) {
			svg_ticks(out, gx, grid_top, rows, cols,
				  pic->global.ndim >= 2);
		}
		if (lead) {
			size_t used = 0;
			line[0] = '\0';
			append_ranges(line, sizeof line, &used, pic,
				      pic->panels[q].offset,
				      pic->panels[q].length, true);
			tps_svg_text(out, gx - gutter,
				     grid_top - 8 - (ticks ? 16 : 0), "", line);
		}
		for (int b = 0; b < pic->n_blocks; b++) {
			if (pic->blocks[b].panel == q) {
				svg_block(out, pic, b, gx, grid_top);
			}
		}
	}

	y = grid_top + (pic->n_panels ? gh : 0) + 24;
	for (int b = 0; b < pic->n_blocks; b++) {
		char label[2048], full[2100];
		block_name(pic, b, name, sizeof name);
		snprintf(full, sizeof full, "%-3s %s", name,
			 block_label(pic, b, label, sizeof label));
		svg_key_line(out, y, kind, pic->blocks[b].empty, full);
		y += SVG_LINE_H;
	}
	y += 12;
	tps_svg_text(out, SVG_MARGIN, y + 12, " font-weight=\"bold\"",
		     "Legend");
	y += 20;
	for (int k = 0, i = 0; k < TPS_PICTURE_KINDS; k++) {
		char said[512];
		if (legend_line(pic, (enum tps_picture_kind)k, said,
				sizeof said)[0]) {
			svg_key_line(out, y, (enum tps_picture_kind)k, false,
				     legend[i++]);
			y += SVG_LINE_H;
		}
	}
	if (pic->sampler_order) {
		tps_svg_text(out, SVG_MARGIN, y + 12, "", sampler_note);
	}
	fputs("</svg>\n", out);
}
