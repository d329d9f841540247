#include "table.hpp"

#include <algorithm>

namespace coexec::cli {
namespace {

std::string pad(const std::string& text, size_t width, Table::Align align) {
    std::string fill(width > text.size() ? width - text.size() : 0, ' ');
    return align == Table::Align::Left ? text + fill : fill + text;
}

std::string trim_right(std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    return line;
}

} // namespace

void Table::add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::vector<std::string> Table::render() const {
    std::vector<size_t> widths;
    for (const auto& c : columns_)
        widths.push_back(c.header.size());
    for (const auto& row : rows_)
        for (size_t i = 0; i < row.size(); ++i)
            widths[i] = std::max(widths[i], row[i].size());

    auto line_of = [&](auto cell_text) {
        std::string line;
        for (size_t i = 0; i < columns_.size(); ++i) {
            if (i) line += "  ";
            line += pad(cell_text(i), widths[i], columns_[i].align);
        }
        return trim_right(line);
    };
    std::vector<std::string> lines;
    lines.push_back(line_of([&](size_t i) { return columns_[i].header; }));
    for (const auto& row : rows_)
        lines.push_back(line_of([&](size_t i) { return row[i]; }));
    return lines;
}

} // namespace coexec::cli
