// Command perfchart draws gatenet's ratio to net per workload from
// gatebench's -json reports: the headline rate and the p99 latency of each
// workload, as gatenet / net with its range, in two panels beside a line
// at 1.0. The README's chart (docs/performance.png) is drawn by it:
//
//	go run ./cmd/gatebench -rounds 5 -json /tmp/gb.json
//	cd tools/perfchart && go run . -o ../../docs/performance.png /tmp/gb.json
//
// With several reports (one per gatebench run) each mark is the median of
// the runs' ratios and its bar their range; with one report, the ratio of
// the medians and the range the rounds allow (gatenet's worst round over
// net's best to gatenet's best over net's worst).
//
// It is a module of its own so that the plotting library stays out of
// gatenet's go.mod; its tests run with `cd tools/perfchart && go test ./...`.
package main

import (
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	stdfont "golang.org/x/image/font"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	ahead  = color.RGBA{R: 0x1a, G: 0x85, B: 0x4a, A: 0xff} // gatenet better than net
	behind = color.RGBA{R: 0xc6, G: 0x3b, B: 0x2f, A: 0xff} // gatenet worse than net
	gray   = color.Gray{Y: 0x60}
	light  = color.Gray{Y: 0xe4}
)

func main() {
	out := flag.String("o", "performance.png", "the image to write (.png, .svg or .pdf)")
	width := flag.Int("width", 900, "width in pixels")
	height := flag.Int("height", 500, "height in pixels")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: perfchart [-o file.png] gatebench.json...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var reps []report
	for _, name := range flag.Args() {
		rep, err := readReportFile(name)
		if err != nil {
			fatal(err)
		}
		reps = append(reps, rep)
	}
	c, err := build(reps)
	if err != nil {
		fatal(err)
	}
	if err := save(c, *out, *width, *height); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "perfchart: wrote %s (%d rates, %d p99s from %d reports)\n",
		*out, len(c.Rates), len(c.P99), c.Runs)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "perfchart:", err)
	os.Exit(1)
}

// px is one pixel at the canvas's 96 dpi.
const px = vg.Inch / 96

func save(c chart, name string, width, height int) error {
	w, h := vg.Length(width)*px, vg.Length(height)*px
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(name)), ".")
	var cv vg.CanvasWriterTo
	if format == "png" {
		cv = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96),
			vgimg.UseBackgroundColor(color.White))}
	} else {
		var err error
		if cv, err = draw.NewFormattedCanvas(w, h, format); err != nil {
			return err
		}
	}
	if err := drawChart(draw.New(cv), c); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := cv.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sans is the chart's typeface (gonum/plot's default is a serif).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func init() {
	plot.DefaultFont = sans
	plotter.DefaultFont = sans
}

func textStyle(size vg.Length, clr color.Color) text.Style {
	return text.Style{
		Color:   clr,
		Font:    font.From(sans, size),
		Handler: plot.DefaultTextHandler,
	}
}

// restyle sets the size and colour of s, keeping its alignment.
func restyle(s *text.Style, size vg.Length, clr color.Color) {
	s.Font = font.From(sans, size)
	s.Color = clr
}

// drawChart draws the two panels, rates and p99s, with the workloads as
// rows (the same row in both panels) and a caption above.
func drawChart(dc draw.Canvas, c chart) error {
	// The rows: every workload with a rate or a p99, top to bottom in
	// gatebench's order.
	var names []string
	index := map[string]int{}
	for _, ps := range [][]point{c.Rates, c.P99} {
		for _, p := range ps {
			if _, ok := index[p.Workload]; !ok {
				index[p.Workload] = len(names)
				names = append(names, p.Label)
			}
		}
	}
	n := len(names)
	y := func(p point) float64 { return float64(n - 1 - index[p.Workload]) }

	// One X range for both panels, so that equal distances mean equal
	// ratios.
	lo, hi := 1.0, 1.0
	for _, ps := range [][]point{c.Rates, c.P99} {
		for _, p := range ps {
			lo, hi = math.Min(lo, p.Lo), math.Max(hi, p.Hi)
		}
	}
	lo = math.Floor(lo*10)/10 - 0.05
	hi = math.Ceil(hi*10)/10 + 0.1

	rates, err := panel("rates: higher is better →", c.Rates, y, n, lo, hi, false)
	if err != nil {
		return err
	}
	p99s, err := panel("p99 latency: lower is better ←", c.P99, y, n, lo, hi, true)
	if err != nil {
		return err
	}
	reversed := make([]string, n)
	for i, s := range names {
		reversed[n-1-i] = s
	}
	rates.NominalY(reversed...)
	p99s.NominalY(make([]string, n)...)
	p99s.Y.Tick.Label.Font.Size = 1 // the rows are named once, on the left
	for _, p := range []*plot.Plot{rates, p99s} {
		p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	}

	// The caption: a title, the runs it was drawn from and a key.
	left := dc.Min.X + 14*px
	at := dc.Max.Y - 10*px
	line := func(sty text.Style, s string) {
		at -= sty.Height(s)
		dc.FillText(sty, vg.Point{X: left, Y: at}, s)
		at -= 5 * px
	}
	title := textStyle(17*px, color.Black)
	title.Font.Weight = stdfont.WeightBold
	line(title, "gatenet / net, per workload")
	sub := textStyle(12*px, gray)
	runs := "one run; dot: ratio of the medians, bar: the range its rounds allow"
	if c.Runs > 1 {
		runs = fmt.Sprintf("%d runs; dot: median of the runs' ratios, bar: their range", c.Runs)
	}
	line(sub, fmt.Sprintf("gatebench -rounds %d, %s; green: gatenet ahead of net, red: behind, gray: range includes 1", c.Rounds, runs))
	line(sub, c.Machine)
	head := dc.Max.Y - at + 10*px

	tiles := draw.Tiles{Rows: 1, Cols: 2, PadTop: head, PadBottom: 8 * px, PadLeft: 8 * px, PadRight: 16 * px, PadX: 24 * px}
	plots := [][]*plot.Plot{{rates, p99s}}
	canvases := plot.Align(plots, tiles, dc)
	rates.Draw(canvases[0][0])
	p99s.Draw(canvases[0][1])
	return nil
}

// panel is one half of the chart: a mark per point at gatenet / net with
// its range, green where gatenet is ahead of net, red where behind, gray
// where the range takes in 1.0, and a dashed line at 1.0.
func panel(title string, ps []point, y func(point) float64, n int, lo, hi float64, lowerIsBetter bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = 8 * px
	restyle(&p.Title.TextStyle, 14*px, color.Black)
	p.X.Label.Text = "gatenet / net"
	restyle(&p.X.Label.TextStyle, 12*px, gray)
	restyle(&p.X.Tick.Label, 12*px, color.Black)
	restyle(&p.Y.Tick.Label, 13*px, color.Black)
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = ticks{}

	// Light rules between the rows and along the ticks.
	grid := plotter.NewGrid()
	grid.Horizontal.Color = light
	grid.Vertical.Color = light
	p.Add(grid)

	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.6}, {X: 1, Y: float64(n) - 0.4}})
	if err != nil {
		return nil, err
	}
	one.Color = gray
	one.Width = 1.2 * px
	one.Dashes = []vg.Length{5 * px, 3 * px}
	p.Add(one)

	if len(ps) == 0 {
		return p, nil
	}
	// A figure whose range takes in 1.0 is gray: its runs (or rounds)
	// do not agree on which of the two is ahead.
	colorOf := func(p point) color.Color {
		switch {
		case p.Lo <= 1 && 1 <= p.Hi:
			return gray
		case (p.Ratio < 1) == lowerIsBetter:
			return ahead
		default:
			return behind
		}
	}

	xys := make(plotter.XYs, len(ps))
	errs := make(plotter.XErrors, len(ps))
	labels := make([]string, len(ps))
	ends := make(plotter.XYs, len(ps))
	for i, pt := range ps {
		xys[i] = plotter.XY{X: pt.Ratio, Y: y(pt)}
		errs[i] = struct{ Low, High float64 }{pt.Ratio - pt.Lo, pt.Hi - pt.Ratio}
		labels[i] = fmt.Sprintf("%.2f", pt.Ratio)
		ends[i] = plotter.XY{X: pt.Hi, Y: y(pt)}
	}

	for i, pt := range ps {
		bar, err := plotter.NewXErrorBars(struct {
			plotter.XYs
			plotter.XErrors
		}{xys[i : i+1], errs[i : i+1]})
		if err != nil {
			return nil, err
		}
		bar.Color = colorOf(pt)
		bar.Width = 1.6 * px
		bar.CapWidth = 8 * px
		p.Add(bar)
	}

	marks, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	marks.GlyphStyleFunc = func(i int) draw.GlyphStyle {
		return draw.GlyphStyle{Color: colorOf(ps[i]), Radius: 4.5 * px, Shape: draw.CircleGlyph{}}
	}
	p.Add(marks)

	vals, err := plotter.NewLabels(plotter.XYLabels{XYs: ends, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range vals.TextStyle {
		vals.TextStyle[i] = textStyle(12*px, colorOf(ps[i]))
		vals.TextStyle[i].YAlign = draw.YCenter
	}
	vals.Offset = vg.Point{X: 6 * px}
	p.Add(vals)
	return p, nil
}

// ticks marks every 0.1 of the ratio axis and names every 0.2.
type ticks struct{}

func (ticks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for i := int(math.Ceil(min * 10)); float64(i) <= max*10+1e-9; i++ {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = fmt.Sprintf("%.1f", t.Value)
		}
		ts = append(ts, t)
	}
	return ts
}
