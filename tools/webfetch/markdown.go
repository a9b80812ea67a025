package webfetch

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxDepth bounds the nesting the converter follows; deeper content is
// kept as plain text.
const maxDepth = 200

// Markdown renders an HTML tree as Markdown: headings, paragraphs, links
// and images (made absolute against base, when not nil), lists, block
// quotes, code, emphasis and tables. Scripts, styles, forms and other
// content a reader does not see are left out.
func Markdown(n *html.Node, base *url.URL) string {
	c := &converter{base: base}
	var blocks []string
	if n.Type == html.ElementNode {
		blocks = c.block(n, 0)
	} else {
		blocks = c.children(n, 0)
	}
	return strings.TrimSpace(strings.Join(blocks, "\n\n"))
}

// converter turns HTML into Markdown.
type converter struct {
	base *url.URL
}

// skipped are elements whose content a reader does not see.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Head: true, atom.Iframe: true,
	atom.Svg: true, atom.Math: true, atom.Canvas: true, atom.Button: true, atom.Input: true, atom.Select: true,
	atom.Textarea: true, atom.Object: true, atom.Embed: true, atom.Audio: true, atom.Video: true, atom.Map: true,
	atom.Dialog: true, atom.Title: true, atom.Meta: true, atom.Link: true, atom.Base: true,
}

// blocks are the elements that start a block of their own.
var blocks = map[atom.Atom]bool{
	atom.Html: true, atom.Body: true, atom.Main: true, atom.Article: true, atom.Section: true, atom.Div: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Nav: true, atom.Form: true, atom.Fieldset: true,
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Ul: true, atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Pre: true,
	atom.Blockquote: true, atom.Table: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true, atom.Tr: true,
	atom.Td: true, atom.Th: true, atom.Caption: true, atom.Hr: true, atom.Figure: true, atom.Figcaption: true,
	atom.Details: true, atom.Summary: true, atom.Address: true, atom.Center: true, atom.Hgroup: true,
	atom.Legend: true, atom.Menu: true,
}

func isBlock(n *html.Node) bool {
	return n.Type == html.ElementNode && blocks[n.DataAtom]
}

// children renders n's children as blocks: block elements each on their
// own, runs of inline content as paragraphs.
func (c *converter) children(n *html.Node, depth int) []string {
	var out []string
	var run []*html.Node
	flush := func() {
		if len(run) == 0 {
			return
		}
		var sb strings.Builder
		for _, child := range run {
			c.inline(child, depth, &sb)
		}
		run = run[:0]
		if text := tidy(sb.String()); text != "" {
			out = append(out, text)
		}
	}
	for child := n.FirstChild; child != nil; child = child.NextSibling {
		if isBlock(child) {
			flush()
			out = append(out, c.block(child, depth+1)...)
			continue
		}
		run = append(run, child)
	}
	flush()
	return out
}

// block renders a block element.
func (c *converter) block(n *html.Node, depth int) []string {
	if skipped[n.DataAtom] {
		return nil
	}
	if depth > maxDepth {
		if text := tidy(collapse(textContent(n))); text != "" {
			return []string{text}
		}
		return nil
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		text := strings.ReplaceAll(c.inlineText(n, depth), "\n", " ")
		if text == "" {
			return nil
		}
		level := int(n.Data[1] - '0')
		return []string{strings.Repeat("#", level) + " " + text}
	case atom.Hr:
		return []string{"---"}
	case atom.Pre:
		return []string{codeBlock(n)}
	case atom.Ul, atom.Ol, atom.Menu:
		if list := c.list(n, depth); list != "" {
			return []string{list}
		}
		return nil
	case atom.Blockquote:
		inner := strings.Join(c.children(n, depth), "\n\n")
		if inner == "" {
			return nil
		}
		return []string{prefixLines(inner, "> ", ">")}
	case atom.Table:
		return c.table(n, depth)
	case atom.Dt:
		if text := strings.ReplaceAll(c.inlineText(n, depth), "\n", " "); text != "" {
			return []string{"**" + text + "**"}
		}
		return nil
	}
	return c.children(n, depth)
}

// list renders a ul or ol.
func (c *converter) list(n *html.Node, depth int) string {
	ordered := n.DataAtom == atom.Ol
	number := 1
	if start, err := strconv.Atoi(attr(n, "start")); ordered && err == nil {
		number = start
	}
	var items []string
	var loose []*html.Node
	addLoose := func() {
		// Content straight in the list, outside any li, reads as one more
		// item's.
		if len(loose) == 0 {
			return
		}
		var text []string
		for _, node := range loose {
			if isBlock(node) {
				text = append(text, c.block(node, depth+1)...)
			} else {
				var sb strings.Builder
				c.inline(node, depth, &sb)
				if t := tidy(sb.String()); t != "" {
					text = append(text, t)
				}
			}
		}
		loose = loose[:0]
		if len(text) > 0 {
			items = append(items, item("- ", strings.Join(text, "\n")))
		}
	}
	for child := n.FirstChild; child != nil; child = child.NextSibling {
		if child.Type != html.ElementNode || child.DataAtom != atom.Li {
			if child.Type == html.ElementNode || (child.Type == html.TextNode && strings.TrimSpace(child.Data) != "") {
				loose = append(loose, child)
			}
			continue
		}
		addLoose()
		body := strings.Join(c.children(child, depth+1), "\n")
		if body == "" {
			continue
		}
		marker := "- "
		if ordered {
			marker = strconv.Itoa(number) + ". "
			number++
		}
		items = append(items, item(marker, body))
	}
	addLoose()
	return strings.Join(items, "\n")
}

// item is a list item: its marker, then its body with the following
// lines indented under the first.
func item(marker, body string) string {
	indent := strings.Repeat(" ", len(marker))
	lines := strings.Split(body, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = indent + lines[i]
		}
	}
	return marker + strings.Join(lines, "\n")
}

// table renders a table as a Markdown table, or its cells' content as
// blocks when it holds a layout rather than data.
func (c *converter) table(n *html.Node, depth int) []string {
	var rows [][]*html.Node
	var caption string
	var walk func(*html.Node)
	walk = func(parent *html.Node) {
		for child := parent.FirstChild; child != nil; child = child.NextSibling {
			if child.Type != html.ElementNode {
				continue
			}
			switch child.DataAtom {
			case atom.Thead, atom.Tbody, atom.Tfoot:
				walk(child)
			case atom.Caption:
				caption = c.inlineText(child, depth)
			case atom.Tr:
				var cells []*html.Node
				for cell := child.FirstChild; cell != nil; cell = cell.NextSibling {
					if cell.Type == html.ElementNode && (cell.DataAtom == atom.Td || cell.DataAtom == atom.Th) {
						cells = append(cells, cell)
					}
				}
				if len(cells) > 0 {
					rows = append(rows, cells)
				}
			}
		}
	}
	walk(n)
	columns := 0
	for _, row := range rows {
		columns = max(columns, len(row))
	}
	if len(rows) == 0 {
		return nil
	}
	if columns == 1 || hasLayout(n) {
		var out []string
		for _, row := range rows {
			for _, cell := range row {
				out = append(out, c.children(cell, depth+1)...)
			}
		}
		return out
	}
	var lines []string
	if caption != "" {
		lines = append(lines, "**"+caption+"**", "")
	}
	for i, row := range rows {
		cells := make([]string, columns)
		for j, cell := range row {
			text := strings.ReplaceAll(c.inlineText(cell, depth), "\n", " ")
			cells[j] = strings.ReplaceAll(text, "|", `\|`)
		}
		lines = append(lines, "| "+strings.Join(cells, " | ")+" |")
		if i == 0 {
			lines = append(lines, "|"+strings.Repeat(" --- |", columns))
		}
	}
	return []string{strings.Join(lines, "\n")}
}

// hasLayout reports a table laying out a page rather than holding data:
// one with a table or a block of text inside a cell.
func hasLayout(table *html.Node) bool {
	found := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for child := n.FirstChild; child != nil && !found; child = child.NextSibling {
			if child.Type == html.ElementNode {
				switch child.DataAtom {
				case atom.Table, atom.P, atom.Div, atom.Ul, atom.Ol, atom.Pre, atom.Blockquote, atom.H1, atom.H2, atom.H3:
					found = true
					return
				}
			}
			walk(child)
		}
	}
	walk(table)
	return found
}

// inlineText renders n's content as one line of inline Markdown.
func (c *converter) inlineText(n *html.Node, depth int) string {
	var sb strings.Builder
	for child := n.FirstChild; child != nil; child = child.NextSibling {
		c.inline(child, depth, &sb)
	}
	return tidy(sb.String())
}

// inline renders n as inline Markdown into sb.
func (c *converter) inline(n *html.Node, depth int, sb *strings.Builder) {
	switch n.Type {
	case html.TextNode:
		sb.WriteString(collapse(n.Data))
		return
	case html.ElementNode:
	default:
		return
	}
	if skipped[n.DataAtom] {
		return
	}
	if depth > maxDepth {
		sb.WriteString(collapse(textContent(n)))
		return
	}
	depth++
	switch n.DataAtom {
	case atom.Br:
		sb.WriteString("\n")
	case atom.Strong, atom.B:
		c.wrap(n, depth, "**", sb)
	case atom.Em, atom.I, atom.Cite, atom.Dfn:
		c.wrap(n, depth, "*", sb)
	case atom.Del, atom.S, atom.Strike:
		c.wrap(n, depth, "~~", sb)
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt, atom.Var:
		sb.WriteString(codeSpan(collapse(textContent(n))))
	case atom.A:
		c.link(n, depth, sb)
	case atom.Img:
		c.image(n, sb)
	default:
		if blocks[n.DataAtom] {
			// A block inside inline content: keep its text apart.
			sb.WriteString(" ")
			c.inlineChildren(n, depth, sb)
			sb.WriteString(" ")
			return
		}
		c.inlineChildren(n, depth, sb)
	}
}

func (c *converter) inlineChildren(n *html.Node, depth int, sb *strings.Builder) {
	for child := n.FirstChild; child != nil; child = child.NextSibling {
		c.inline(child, depth, sb)
	}
}

// wrap renders n's content between marks, keeping the spaces around it
// outside them.
func (c *converter) wrap(n *html.Node, depth int, mark string, sb *strings.Builder) {
	var inner strings.Builder
	c.inlineChildren(n, depth, &inner)
	text := inner.String()
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		sb.WriteString(text)
		return
	}
	if strings.HasPrefix(trimmed, mark) && strings.HasSuffix(trimmed, mark) {
		// Already emphasised, as <b><strong>x</strong></b>.
		sb.WriteString(text)
		return
	}
	if text[0] == ' ' {
		sb.WriteString(" ")
	}
	sb.WriteString(mark + trimmed + mark)
	if text[len(text)-1] == ' ' {
		sb.WriteString(" ")
	}
}

// link renders an a element.
func (c *converter) link(n *html.Node, depth int, sb *strings.Builder) {
	var inner strings.Builder
	c.inlineChildren(n, depth, &inner)
	text := strings.TrimSpace(strings.ReplaceAll(inner.String(), "\n", " "))
	href := c.resolve(attr(n, "href"))
	if href == "" || strings.HasPrefix(strings.TrimSpace(attr(n, "href")), "#") {
		sb.WriteString(inner.String())
		return
	}
	if text == "" {
		text = strings.TrimSpace(attr(n, "title"))
	}
	if text == "" {
		return
	}
	if s := inner.String(); s != "" && s[0] == ' ' {
		sb.WriteString(" ")
	}
	fmt.Fprintf(sb, "[%s](%s)", text, href)
	if s := inner.String(); s != "" && s[len(s)-1] == ' ' {
		sb.WriteString(" ")
	}
}

// image renders an img element.
func (c *converter) image(n *html.Node, sb *strings.Builder) {
	alt := strings.TrimSpace(collapse(attr(n, "alt")))
	src := c.resolve(attr(n, "src"))
	if src == "" {
		sb.WriteString(alt)
		return
	}
	fmt.Fprintf(sb, "![%s](%s)", alt, src)
}

// resolve makes a link's address absolute and fit for Markdown; an address
// that leads nowhere a reader can follow is "".
func (c *converter) resolve(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if c.base != nil {
		u = c.base.ResolveReference(u)
	}
	switch u.Scheme {
	case "http", "https", "mailto", "ftp", "":
	default: // javascript:, data:, …
		return ""
	}
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(u.String())
}

// codeBlock renders a pre element as a fenced code block.
func codeBlock(n *html.Node) string {
	code := strings.TrimRight(preText(n), "\n")
	language := languageOf(n)
	for child := n.FirstChild; child != nil && language == ""; child = child.NextSibling {
		if child.Type == html.ElementNode && child.DataAtom == atom.Code {
			language = languageOf(child)
		}
	}
	fence := "```"
	for strings.Contains(code, fence) {
		fence += "`"
	}
	return fence + language + "\n" + code + "\n" + fence
}

// languageOf is the language a code element's class names, as
// language-go or lang-go.
func languageOf(n *html.Node) string {
	for _, class := range strings.Fields(attr(n, "class")) {
		for _, prefix := range []string{"language-", "lang-"} {
			if language, ok := strings.CutPrefix(class, prefix); ok && language != "" {
				return language
			}
		}
	}
	return ""
}

// preText is a pre element's text, its white space kept.
func preText(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for child := n.FirstChild; child != nil; child = child.NextSibling {
			switch {
			case child.Type == html.TextNode:
				sb.WriteString(child.Data)
			case child.Type == html.ElementNode && child.DataAtom == atom.Br:
				sb.WriteString("\n")
			case child.Type == html.ElementNode && !skipped[child.DataAtom]:
				walk(child)
			}
		}
	}
	walk(n)
	return sb.String()
}

// codeSpan renders text as inline code.
func codeSpan(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	longest, current := 0, 0
	for _, r := range text {
		if r == '`' {
			current++
			longest = max(longest, current)
		} else {
			current = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		text = " " + text + " "
	}
	return fence + text + fence
}

// textContent is the text under n, without what a reader does not see.
func textContent(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			sb.WriteString(n.Data)
			return
		}
		if n.Type == html.ElementNode && skipped[n.DataAtom] {
			return
		}
		for child := n.FirstChild; child != nil; child = child.NextSibling {
			walk(child)
		}
	}
	walk(n)
	return sb.String()
}

// collapse turns each run of white space into one space, as a browser
// shows text.
func collapse(s string) string {
	var sb strings.Builder
	space := false
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f':
			space = true
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
	}
	if space {
		sb.WriteByte(' ')
	}
	return sb.String()
}

// tidy trims a paragraph: single spaces, no space around line breaks, no
// empty first or last line.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(collapse(line))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// prefixLines puts prefix before each line of s, and bare before empty
// ones.
func prefixLines(s, prefix, bare string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if line == "" {
			lines[i] = bare
		} else {
			lines[i] = prefix + line
		}
	}
	return strings.Join(lines, "\n")
}

// attr is n's attribute called key, or "".
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}
