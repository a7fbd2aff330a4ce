//! The cost curve's outputs from a list of per-size figures: a markdown
//! table per controller and an SVG plot (plotters) of RSS and p99 latency
//! against size, one chart per controller.
//!
//! This module must NOT start processes or touch files: it turns figures
//! into text, so that its output can be checked from fixed figures.

use plotters::prelude::*;

use super::figures::{CatalogFigures, MirrorFigures, requests};

/// The RSS series' colour (and its legend's).
pub(crate) const RSS_COLOR: RGBColor = RGBColor(31, 119, 180);
/// The p99 series' colour (and its legend's).
pub(crate) const P99_COLOR: RGBColor = RGBColor(214, 39, 40);

/// The captions of both y axes.
pub(crate) const RSS_AXIS: &str = "RSS (MiB)";
pub(crate) const P99_AXIS: &str = "p99 latency (ms)";

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "-".to_owned(),
        |k| format!("{:.1} MiB", k as f64 / 1024.0),
    )
}

/// Bytes of `kib` per object.
fn per_object(kib: Option<u64>, objects: usize) -> String {
    match kib {
        Some(k) if objects > 0 => format!("{:.0} B", k as f64 * 1024.0 / objects as f64),
        _ => "-".to_owned(),
    }
}

/// Bytes per object added since the previous size: the slope the memory
/// grows by, free of the fixed part.
fn marginal(prev: Option<(Option<u64>, usize)>, kib: Option<u64>, objects: usize) -> String {
    match (prev, kib) {
        (Some((Some(p), po)), Some(k)) if objects > po => format!(
            "{:.0} B",
            (k as f64 - p as f64) * 1024.0 / (objects - po) as f64
        ),
        _ => "-".to_owned(),
    }
}

/// The mirror controller's table, smallest size first.
pub(crate) fn mirror_table(figures: &[MirrorFigures]) -> String {
    let mut rows: Vec<&MirrorFigures> = figures.iter().collect();
    rows.sort_by_key(|f| f.namespaces);
    let per_ns = rows.first().map_or(0, |f| f.copies_per_namespace);
    let idle = rows.first().map_or(0.0, |f| f.idle_secs);
    let mut out = format!(
        "## mirror controller: namespaces x {per_ns} copies each (mirra only)\n\n\
         | namespaces | copies | initial convergence: requests per copy (time) \
         | requests per namespace creation, burst | requests per namespace creation, paced \
         | requests per relabel out | requests per copy of an item edit | idle requests ({idle:.0} s) \
         | RSS growth at full copies | RSS per copy | RSS per added copy \
         | p99 creation latency, burst | creation latency p50 / p99, paced |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    let mut prev = None;
    for f in rows {
        out += &format!(
            "| {} | {} | {} ({:.1} s) | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} ms | {:.0} ms / {:.0} ms |\n",
            f.namespaces,
            f.copies,
            num(f.initial_per_copy(), 2),
            f.initial_secs,
            num(f.burst_per_namespace(), 1),
            num(f.paced_per_namespace(), 1),
            num(f.relabel_per_namespace(), 1),
            num(f.edit_per_copy(), 2),
            requests(&f.idle_requests),
            mib(f.rss_growth_kib),
            per_object(f.rss_growth_kib, f.copies),
            marginal(prev, f.rss_growth_kib, f.copies),
            f.burst_p99_ms,
            f.paced_p50_ms,
            f.paced_p99_ms,
        );
        prev = Some((f.rss_growth_kib, f.copies));
    }
    out += "\nRequests are the controller's to the API server: every verb but watch, less the \
            bench's own write that made each event (a namespace create or relabel, the \
            SyncConfig patch); the bench's copy-counting watch is counted too. RSS is the growth \
            of the bench process (the controller and its caches) from before the controller \
            started to full copies; per added copy is the slope from the previous size. \
            Latency: a namespace creation until all its copies are seen on a watch; burst is \
            the events created back to back (a throughput figure), paced one every 100 ms.\n";
    out
}

/// The catalog controller's table, smallest size first.
pub(crate) fn catalog_table(figures: &[CatalogFigures]) -> String {
    let mut rows: Vec<&CatalogFigures> = figures.iter().collect();
    rows.sort_by_key(|f| f.services);
    let endpoints = rows.first().map_or(0, |f| f.endpoints);
    let idle = rows.first().map_or(0.0, |f| f.idle_secs);
    let mut out = format!(
        "## catalog controller: Services x {endpoints} endpoints (mirra only)\n\n\
         | Services | instances | cold start: Raft applies (per instance), time \
         | rollout: slice changes (pods) | Raft applies per rollout change \
         | rollout latency p50 / p99 | idle Raft applies ({idle:.0} s) \
         | RSS after cold start | RSS per instance | RSS per added instance \
         | peak RSS during cold start |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    let mut prev = None;
    for f in rows {
        out += &format!(
            "| {} | {} | {} ({}), {:.1} s | {} ({}) | {} | {:.0} ms / {:.0} ms | {} | {} | {} | {} | {} |\n",
            f.services,
            f.instances,
            f.cold_applies,
            num(f.cold_applies_per_instance(), 3),
            f.cold_secs,
            f.rollout_changes,
            f.rollout_pods,
            num(f.applies_per_change(), 2),
            f.rollout_p50_ms,
            f.rollout_p99_ms,
            f.idle_applies,
            mib(f.rss_after_cold_kib),
            per_object(f.rss_after_cold_kib, f.instances),
            marginal(prev, f.rss_after_cold_kib, f.instances),
            mib(f.rss_cold_peak_kib),
        );
        prev = Some((f.rss_after_cold_kib, f.instances));
    }
    let whose = if figures.iter().all(|f| f.separate_process) {
        "the `mirra sync-catalog` process's own"
    } else {
        "of the whole bench process (controller and both sandboxes: no `mirra` binary)"
    };
    out += &format!(
        "\nA rollout change is one EndpointSlice write replacing all of a Service's pods; its \
         latency runs from that write until a Consul watch sees the new addresses. RSS is \
         {whose}, whole (fixed part included), so per instance falls with size; per added \
         instance is the slope from the previous size.\n"
    );
    out
}

/// One chart: RSS (left axis) and p99 latency (right axis) against size.
pub(crate) struct Panel {
    pub(crate) title: String,
    pub(crate) x_desc: String,
    pub(crate) rss_label: String,
    pub(crate) p99_label: String,
    /// `(size, RSS in MiB, p99 in ms)`; a missing RSS is left out of the
    /// RSS line.
    pub(crate) points: Vec<(f64, Option<f64>, f64)>,
}

/// A panel of `(size, RSS in KiB, p99 in ms)` points, sorted by size.
fn panel(
    title: &str,
    x_desc: &str,
    rss_label: &str,
    p99_label: &str,
    points: impl Iterator<Item = (usize, Option<u64>, f64)>,
) -> Panel {
    let mut points: Vec<_> = points
        .map(|(size, kib, p99)| (size as f64, kib.map(|k| k as f64 / 1024.0), p99))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Panel {
        title: title.into(),
        x_desc: x_desc.into(),
        rss_label: rss_label.into(),
        p99_label: p99_label.into(),
        points,
    }
}

pub(crate) fn mirror_panel(figures: &[MirrorFigures]) -> Panel {
    panel(
        "mirror controller",
        "namespaces",
        "RSS growth at full copies (MiB)",
        "p99 namespace creation to copies, paced (ms)",
        figures
            .iter()
            .map(|f| (f.namespaces, f.rss_growth_kib, f.paced_p99_ms)),
    )
}

pub(crate) fn catalog_panel(figures: &[CatalogFigures]) -> Panel {
    panel(
        "catalog controller",
        "Services",
        "RSS after cold start (MiB)",
        "p99 slice change to Consul, rollout (ms)",
        figures
            .iter()
            .map(|f| (f.services, f.rss_after_cold_kib, f.rollout_p99_ms)),
    )
}

/// The top of an axis holding `values`, `headroom` times the largest (1
/// when there is none).
fn top(values: impl Iterator<Item = f64>, headroom: f64) -> f64 {
    let max = values.fold(0.0, f64::max);
    if max > 0.0 { max * headroom } else { 1.0 }
}

/// Tick labels with decimals only where the axis is short.
fn tick(top: f64) -> impl Fn(&f64) -> String {
    move |v| {
        if top >= 10.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    }
}

fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err =
        |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing {}: {e:?}", panel.title);
    // From 0 to a little past the largest size; the y axes 30% above
    // their largest value, so that the lines stay clear of the legend
    // (upper left).
    let x_max = top(panel.points.iter().map(|p| p.0), 1.1);
    let rss_max = top(panel.points.iter().filter_map(|p| p.1), 1.3);
    let p99_max = top(panel.points.iter().map(|p| p.2), 1.3);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .right_y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, 0.0..rss_max)
        .map_err(err)?
        .set_secondary_coord(0.0..x_max, 0.0..p99_max);
    chart
        .configure_mesh()
        .x_desc(panel.x_desc.as_str())
        .y_desc(RSS_AXIS)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&tick(rss_max))
        .light_line_style(BLACK.mix(0.04))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    chart
        .configure_secondary_axes()
        .y_desc(P99_AXIS)
        .y_label_formatter(&tick(p99_max))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(err)?;
    let rss: Vec<(f64, f64)> = panel
        .points
        .iter()
        .filter_map(|&(x, rss, _)| rss.map(|r| (x, r)))
        .collect();
    // A series with no point would draw an empty line and a legend for
    // nothing.
    if !rss.is_empty() {
        chart
            .draw_series(LineSeries::new(rss, RSS_COLOR.stroke_width(2)).point_size(4))
            .map_err(err)?
            .label(panel.rss_label.as_str())
            .legend(|(x, y)| Rectangle::new([(x, y - 4), (x + 16, y + 4)], RSS_COLOR.filled()));
    }
    let p99: Vec<(f64, f64)> = panel.points.iter().map(|&(x, _, p)| (x, p)).collect();
    if !p99.is_empty() {
        chart
            .draw_secondary_series(LineSeries::new(p99, P99_COLOR.stroke_width(2)).point_size(4))
            .map_err(err)?
            .label(panel.p99_label.as_str())
            .legend(|(x, y)| Rectangle::new([(x, y - 4), (x + 16, y + 4)], P99_COLOR.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The SVG: the panels side by side, each 640 x 480.
pub(crate) fn svg(panels: &[Panel]) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let width = 640 * u32::try_from(panels.len().max(1))?;
        let root = SVGBackend::with_string(&mut out, (width, 480)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| anyhow::anyhow!("drawing the background: {e:?}"))?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(panel, area)?;
        }
        root.present()
            .map_err(|e| anyhow::anyhow!("writing the SVG: {e:?}"))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::figures::tests::{catalog, mirror};
    use super::*;

    #[test]
    fn the_mirror_table_has_a_row_per_size_with_per_event_costs() {
        // Given out of order: the table sorts by size.
        let t = mirror_table(&[mirror(2000, Some(163_840)), mirror(1000, Some(81_920))]);
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 3, "{t}");
        assert!(rows[0].starts_with("| namespaces | copies |"), "{t}");
        assert!(rows[0].contains("idle requests (30 s)"), "{t}");
        assert_eq!(
            rows[1],
            "| 1000 | 40000 | 1.00 (2.0 s) | 41.0 | 40.0 | 40.0 | 1.00 | 0 | 80.0 MiB | 2097 B | - | 1800 ms | 12 ms / 25 ms |"
        );
        // 80 MiB more for 40,000 more copies: 2,097 bytes each.
        assert_eq!(
            rows[2],
            "| 2000 | 80000 | 1.00 (2.0 s) | 41.0 | 40.0 | 40.0 | 1.00 | 0 | 160.0 MiB | 2097 B | 2097 B | 1800 ms | 12 ms / 25 ms |"
        );
        assert!(t.starts_with("## mirror controller: namespaces x 40 copies each"));
    }

    #[test]
    fn the_catalog_table_has_a_row_per_size_and_says_whose_rss() {
        let t = catalog_table(&[catalog(10_000, Some(51_200)), catalog(20_000, Some(71_680))]);
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 3, "{t}");
        assert_eq!(
            rows[1],
            "| 10000 | 50000 | 1563 (0.031), 4.0 s | 180 (900) | 2.00 | 40 ms / 120 ms | 0 | 50.0 MiB | 1049 B | - | 54.0 MiB |"
        );
        // 20 MiB more for 50,000 more instances.
        assert_eq!(
            rows[2],
            "| 20000 | 100000 | 3126 (0.031), 4.0 s | 180 (900) | 2.00 | 40 ms / 120 ms | 0 | 70.0 MiB | 734 B | 419 B | 74.0 MiB |"
        );
        assert!(t.contains("`mirra sync-catalog` process's own"), "{t}");
        let unknown = catalog_table(&[catalog(200, None)]);
        assert!(unknown.contains("| - | - | - | - |"), "{unknown}");
    }

    /// The `points` attribute of each polyline drawn in `color`.
    fn polylines_in(svg: &str, color: RGBColor) -> Vec<usize> {
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", color.0, color.1, color.2);
        svg.split("<polyline")
            .skip(1)
            .filter_map(|p| p.split("/>").next())
            .filter(|p| p.contains(&stroke))
            .filter_map(|p| p.split("points=\"").nth(1)?.split('"').next())
            .map(|points| points.split_whitespace().count())
            .collect()
    }

    #[test]
    fn the_svg_has_both_charts_their_captions_and_one_line_per_series() {
        let m = [
            mirror(1000, Some(81_920)),
            mirror(2000, Some(163_840)),
            mirror(5000, Some(409_600)),
        ];
        let c = [catalog(10_000, Some(51_200)), catalog(20_000, Some(71_680))];
        let s = svg(&[mirror_panel(&m), catalog_panel(&c)]).unwrap();
        assert!(s.starts_with("<svg"), "{s}");
        assert!(s.contains("width=\"1280\""), "{s}");
        for caption in [
            "mirror controller",
            "catalog controller",
            "namespaces",
            "Services",
            RSS_AXIS,
            P99_AXIS,
            "RSS growth at full copies (MiB)",
            "p99 slice change to Consul, rollout (ms)",
        ] {
            assert!(
                s.contains(&format!("{caption}\n</text>")),
                "no {caption:?} in {s}"
            );
        }
        // One line per series and chart, through every size; the legends
        // are rectangles.
        assert_eq!(polylines_in(&s, RSS_COLOR), vec![3, 2]);
        assert_eq!(polylines_in(&s, P99_COLOR), vec![3, 2]);
    }

    #[test]
    fn a_series_without_points_draws_no_line() {
        let s = svg(&[catalog_panel(&[catalog(200, None)])]).unwrap();
        assert!(polylines_in(&s, RSS_COLOR).is_empty(), "{s}");
        assert!(!s.contains("RSS after cold start (MiB)"), "{s}");
        assert_eq!(polylines_in(&s, P99_COLOR), vec![1]);
    }
}
