"""In Jupyter a trace shows itself as `tpsim explain --format md`
(_repr_markdown_) and as tpsim view's page (_repr_html_, in an iframe),
a picture as its SVG (_repr_svg_): each the bytes the tpsim binary
writes for the same trace."""
import html
import re

from conftest import cli


def test_reprs_are_the_verbs_outputs(example_trace, tmp_path):
    path = tmp_path / "t.json"
    example_trace.save(path)
    _, md, _ = cli("explain", str(path), "--format", "md")
    _, page, _ = cli("view", str(path))
    _, svg, _ = cli("picture", str(path), "--tensor", "fc.out")
    assert example_trace._repr_markdown_() == md.decode()
    frame = example_trace._repr_html_()
    m = re.fullmatch(r'<iframe srcdoc="([^"]*)" style="[^"]*"></iframe>',
                     frame)
    assert m, frame[:200]
    assert html.unescape(m.group(1)) == page.decode()
    pic = example_trace.picture("fc.out")
    assert isinstance(pic, str) and pic == svg.decode()
    assert pic._repr_svg_() == svg.decode()
    assert pic.startswith("<?xml")
